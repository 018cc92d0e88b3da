// Pairing collectives across ranks: by process group and sequence number where torch.profiler's
// traces name them (on the kernel, or on the record_param_comms op that launched it), by order
// otherwise. Four ranks in tensor-parallel pairs {0,1},{2,3} and data-parallel pairs {0,2},{1,3},
// where the pairs {2,3} run one collective more (a broadcast of their batch) each step: pairing by
// order then joins rank 0's data-parallel all-reduce with rank 2's tensor-parallel one.
#include <cudascope/analysis/collective_pairing.h>
#include <cudascope/analysis/rank_merge.h>
#include <cudascope/analysis/trace_loader.h>

#include <gtest/gtest.h>

#include <set>
#include <string>

using namespace cudascope::analysis;

namespace {

struct Group {
  std::string name, description, members;
};

// As dist.new_group numbers them when every rank creates [0,1], [2,3], [0,2], [1,3] in turn.
Group tensor_parallel(int rank) { return rank < 2 ? Group{"1", "tp", "[0, 1]"} : Group{"2", "tp", "[2, 3]"}; }
Group data_parallel(int rank) { return rank % 2 == 0 ? Group{"3", "dp", "[0, 2]"} : Group{"4", "dp", "[1, 3]"}; }

// How a kernel leads to its record_param_comms op: Kineto copies the op's group and "Seq" onto
// the kernel; older Kineto did not copy "Seq", the kernel naming only the op's External id;
// a kernel linked to another op of the collective (nccl:all_reduce inside record_param_comms)
// reaches it through its launch: the ac2g flow from cudaLaunchKernel, inside the op.
enum class Link { args_on_kernel, external_id, launch_flow };

// A torch.profiler (Kineto) trace of one rank, built collective by collective.
class KinetoRank {
 public:
  explicit KinetoRank(int rank, bool name_groups = true) : rank_(rank), name_groups_(name_groups) {}

  // The host's record_param_comms op and the NCCL kernel it launched, linked as `link` says.
  void collective(const Group& g, const std::string& collective, int duration_us, Link link) {
    const int seq = ++seq_[g.name];
    const int id = next_id_++;
    const std::string group_args = "\"Collective name\":\"" + collective + "\",\"Process Group Name\":\"" + g.name +
                                   "\",\"Process Group Description\":\"" + g.description + "\",\"Process Group Ranks\":\"" +
                                   g.members + "\",\"Seq\":" + std::to_string(seq) + ",\"Group size\":2,\"dtype\":\"Float\"";
    const std::string op_args = name_groups_ ? "," + group_args : "";
    const std::string kernel_args = name_groups_ && link == Link::args_on_kernel ? "," + group_args : "";
    event("record_param_comms", "cpu_op", 5000 + rank_, now_us_, 8, "{\"External id\":" + std::to_string(id) + op_args + "}");
    int kernel_id = id;
    if (link == Link::launch_flow) {
      kernel_id = next_id_++;
      event("nccl:" + collective, "cpu_op", 5000 + rank_, now_us_ + 1, 6, "{\"External id\":" + std::to_string(kernel_id) + "}");
      event("cudaLaunchKernel", "cuda_runtime", 5000 + rank_, now_us_ + 2, 3, "{\"correlation\":" + std::to_string(id) + "}");
      flow('s', id, 5000 + rank_, 1, now_us_ + 2);
      flow('f', id, rank_, 20, now_us_ + 10);
    }
    event("ncclDevKernel_" + collective + "_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "kernel", rank_, now_us_ + 10,
          duration_us, "{\"External id\":" + std::to_string(kernel_id) + ",\"stream\":20" + kernel_args + "}");
    now_us_ += 100;
  }

  std::vector<CommunicatorCollectives> communicators() const {
    const std::string text = "{\"schemaVersion\":1,\"deviceProperties\":[{\"id\":" + std::to_string(rank_) +
                             ",\"name\":\"H100\"}],\"distributedInfo\":{\"backend\":\"nccl\",\"rank\":" + std::to_string(rank_) +
                             ",\"world_size\":4},\"traceEvents\":[" + events_ + "]}";
    auto loaded = load_trace_text(text, "rank " + std::to_string(rank_));
    EXPECT_TRUE(loaded.ok()) << loaded.error;
    return loaded.ok() ? collectives_by_communicator(*loaded.model) : std::vector<CommunicatorCollectives>{};
  }

  RankSummary summary() const {
    RankSummary s;
    s.rank = rank_;
    s.world_size = 4;
    s.file = "kineto_" + std::to_string(rank_) + ".json";
    s.communicators = communicators();
    return s;
  }

 private:
  void event(const std::string& name, const std::string& cat, int pid, int ts, int dur, const std::string& args) {
    if (!events_.empty()) events_ += ",\n";
    events_ += "{\"ph\":\"X\",\"name\":\"" + name + "\",\"cat\":\"" + cat + "\",\"pid\":" + std::to_string(pid) +
               ",\"tid\":" + std::to_string(cat == "kernel" ? 20 : 1) + ",\"ts\":" + std::to_string(ts) +
               ",\"dur\":" + std::to_string(dur) + ",\"args\":" + args + "}";
  }

  void flow(char ph, int id, int pid, int tid, int ts) {
    events_ += std::string(",\n{\"ph\":\"") + ph + "\",\"id\":" + std::to_string(id) + ",\"pid\":" + std::to_string(pid) +
               ",\"tid\":" + std::to_string(tid) + ",\"ts\":" + std::to_string(ts) + ",\"cat\":\"ac2g\",\"name\":\"ac2g\"" +
               (ph == 'f' ? ",\"bp\":\"e\"" : "") + "}";
  }

  int rank_;
  bool name_groups_;
  int next_id_ = 100;
  int now_us_ = 1000;
  std::string events_;
  std::map<std::string, int> seq_;
};

// Two steps of: (pairs {2,3} only) a broadcast on the tensor-parallel group, two all-reduces on
// it, one on the data-parallel group. Ranks 1 and 3 reach the tensor-parallel all-reduces last
// (their kernels are the shortest); ranks 2 and 3 reach the data-parallel ones last.
std::vector<KinetoRank> tp_dp_job(bool name_groups = true) {
  std::vector<KinetoRank> ranks;
  for (int r = 0; r < 4; ++r) {
    KinetoRank k(r, name_groups);
    for (int step = 0; step < 2; ++step) {
      if (r >= 2) k.collective(tensor_parallel(r), "Broadcast", 15, Link::args_on_kernel);
      k.collective(tensor_parallel(r), "AllReduce", r % 2 == 1 ? 20 : 50, Link::external_id);
      k.collective(tensor_parallel(r), "AllReduce", r % 2 == 1 ? 20 : 50, Link::launch_flow);
      k.collective(data_parallel(r), "AllReduce", r >= 2 ? 30 : 80, Link::args_on_kernel);
    }
    ranks.push_back(std::move(k));
  }
  return ranks;
}

std::vector<std::vector<CommunicatorCollectives>> collectives_of(const std::vector<KinetoRank>& ranks) {
  std::vector<std::vector<CommunicatorCollectives>> out;
  for (const KinetoRank& k : ranks) out.push_back(k.communicators());
  return out;
}

std::set<std::size_t> ranks_of(const PairedCollective& p) {
  std::set<std::size_t> ranks;
  for (const auto& part : p.parts) ranks.insert(part.rank);
  return ranks;
}

TEST(CollectivePairingTest, GroupAndSequenceComeFromTheKernelOrTheOpThatLaunchedIt) {
  const auto rank2 = tp_dp_job()[2].communicators();
  ASSERT_EQ(rank2.size(), 2u) << "its tensor- and data-parallel groups";
  const CommunicatorCollectives& tp = rank2[0];
  EXPECT_EQ(tp.name, "2");
  EXPECT_EQ(tp.description, "tp");
  EXPECT_EQ(tp.members, "[2, 3]");
  EXPECT_TRUE(tp.has_sequence) << "found on the op the all-reduces' kernels name, or whose launch they come from";
  EXPECT_EQ(tp.seq, (std::vector<std::int64_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(rank2[1].name, "3");
  EXPECT_EQ(rank2[1].seq, (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(pairing_rule(collectives_of(tp_dp_job())), CollectivePairing::communicator_and_sequence);
}

TEST(CollectivePairingTest, OrderJoinsDifferentGroupsWhereGroupAndSequenceDoNot) {
  const auto collectives = collectives_of(tp_dp_job());
  auto communicator_of = [&](const PairedCollective::Part& part) { return collectives[part.rank][part.communicator].name; };

  // By order: rank 0's third collective is its data-parallel all-reduce, rank 2's is a
  // tensor-parallel all-reduce (its pair broadcast first).
  const auto by_order = pair_collectives(collectives, CollectivePairing::order);
  ASSERT_GT(by_order.size(), 2u);
  const PairedCollective& third = by_order[2];
  ASSERT_EQ(third.parts.size(), 4u);
  EXPECT_EQ(communicator_of(third.parts[0]), "3") << "rank 0: data-parallel {0,2}";
  EXPECT_EQ(communicator_of(third.parts[2]), "2") << "rank 2: tensor-parallel {2,3}";

  // By group and sequence number: each operation joins exactly its group's two ranks.
  const auto by_sequence = pair_collectives(collectives, CollectivePairing::communicator_and_sequence);
  const std::map<std::string, std::set<std::size_t>> members{{"1", {0, 1}}, {"2", {2, 3}}, {"3", {0, 2}}, {"4", {1, 3}}};
  ASSERT_EQ(by_sequence.size(), 4u + 6u + 2u + 2u);
  for (const PairedCollective& p : by_sequence) {
    EXPECT_EQ(ranks_of(p), members.at(p.communicator)) << "communicator " << p.communicator << " seq " << p.key;
    for (const auto& part : p.parts) EXPECT_EQ(communicator_of(part), p.communicator);
  }
}

TEST(CollectivePairingTest, StatsTableSaysHowCollectivesWerePairedAndWhoArrivedLast) {
  std::vector<RankSummary> summaries;
  for (const KinetoRank& k : tp_dp_job()) summaries.push_back(k.summary());
  const RankReport report = merge_rank_summaries(summaries);
  EXPECT_EQ(report.collective_pairing, CollectivePairing::communicator_and_sequence);
  ASSERT_EQ(report.communicators.size(), 4u);
  const CommunicatorRow& dp = report.communicators[2];
  EXPECT_EQ(dp.communicator, "3");
  EXPECT_EQ(dp.description, "dp");
  EXPECT_EQ(dp.members, "[0, 2]");
  EXPECT_EQ(dp.ranks, "0 2");
  EXPECT_EQ(dp.collectives, 2);
  EXPECT_EQ(dp.partial, 0);
  EXPECT_EQ(dp.median_ns, 80'000);
  EXPECT_EQ(dp.wait_median_ns, 50'000) << "rank 0 waited 80 - 30 us for rank 2";
  EXPECT_EQ(dp.last_to_arrive, "2");
  EXPECT_EQ(report.communicators[1].ranks, "2 3");
  EXPECT_EQ(report.communicators[1].collectives, 6);
  EXPECT_EQ(report.communicators[1].last_to_arrive, "3") << "the broadcasts are even; the all-reduces wait for rank 3";
  EXPECT_TRUE(report.notes.empty()) << report.notes.front();

  const std::string table = format_rank_report(report, StatsFormat::table);
  EXPECT_NE(table.find("Collectives across ranks (paired by communicator and sequence number"), std::string::npos) << table;
  const std::string json = format_rank_report(report, StatsFormat::json);
  EXPECT_NE(json.find("\"collectives_paired_by\":\"communicator and sequence number\""), std::string::npos) << json;
  const std::string csv = format_rank_report(report, StatsFormat::csv);
  EXPECT_NE(csv.find("\ncommunicator,3,dp,\"[0, 2]\",0 2,communicator and sequence number,2,0,"), std::string::npos) << csv;
}

TEST(CollectivePairingTest, SummariesKeepTheCollectivesSoTheyMergeAlike) {
  const RankSummary s = tp_dp_job()[3].summary();
  const auto read = parse_rank_summary(rank_summary_json(s), "summary");
  ASSERT_TRUE(read.ok()) << read.error;
  ASSERT_EQ(read.summary.communicators.size(), 2u);
  const CommunicatorCollectives& a = s.communicators[0];
  const CommunicatorCollectives& b = read.summary.communicators[0];
  EXPECT_EQ(b.name, a.name);
  EXPECT_EQ(b.description, a.description);
  EXPECT_EQ(b.members, a.members);
  EXPECT_EQ(b.has_sequence, a.has_sequence);
  EXPECT_EQ(b.seq, a.seq);
  EXPECT_EQ(b.start_ns, a.start_ns);
  EXPECT_EQ(b.end_ns, a.end_ns);
}

// A kernel whose record_param_comms fell before torch.profiler's window names no group: it stays
// unpaired, and the other collectives keep their pairing.
TEST(CollectivePairingTest, AKernelOfNoGroupIsLeftOutNotEveryPairing) {
  std::vector<KinetoRank> job = tp_dp_job();
  KinetoRank stray(0, false);
  stray.collective(data_parallel(0), "AllReduce", 10, Link::external_id);
  std::vector<RankSummary> summaries;
  for (const KinetoRank& k : job) summaries.push_back(k.summary());
  summaries[0].communicators.push_back(stray.communicators().front());
  ASSERT_TRUE(summaries[0].communicators.back().name.empty());
  const RankReport report = merge_rank_summaries(summaries);
  EXPECT_EQ(report.collective_pairing, CollectivePairing::communicator_and_sequence);
  ASSERT_EQ(report.communicators.size(), 4u);
  EXPECT_EQ(report.communicators[2].collectives, 2);
  ASSERT_EQ(report.notes.size(), 1u);
  EXPECT_EQ(report.notes[0], "1 communication kernels name no process group (their op was not recorded): left unpaired");
}

TEST(CollectivePairingTest, TracesWithoutGroupsArePairedByOrderAndSaySo) {
  std::vector<RankSummary> summaries;
  for (const KinetoRank& k : tp_dp_job(false)) summaries.push_back(k.summary());
  const RankReport report = merge_rank_summaries(summaries);
  EXPECT_EQ(report.collective_pairing, CollectivePairing::order);
  ASSERT_EQ(report.communicators.size(), 1u);
  EXPECT_EQ(report.communicators[0].communicator, "all");
  EXPECT_EQ(report.communicators[0].ranks, "0-3");
  EXPECT_EQ(report.communicators[0].collectives, 6) << "rank 0's six paired with the first six of ranks 2 and 3";
  EXPECT_EQ(report.communicators[0].partial, 2);
  ASSERT_FALSE(report.notes.empty());
  EXPECT_NE(report.notes.back().find("collectives paired by order"), std::string::npos);
  EXPECT_NE(format_rank_report(report, StatsFormat::table).find("(paired by order;"), std::string::npos);
}

}  // namespace
