// Pairing collectives across ranks: by process group and sequence number where torch.profiler's
// traces name them (on the kernel, or on the record_param_comms op that launched it), by NCCL
// communicator and order where cudascope's traces name the communicator (the NCCL range around
// the launch), by order otherwise. Four ranks in tensor-parallel pairs {0,1},{2,3} and
// data-parallel pairs {0,2},{1,3}, where the pairs {2,3} run one collective more (a broadcast of
// their batch) each step: pairing by order then joins rank 0's data-parallel all-reduce with
// rank 2's tensor-parallel one.
#include "nccl_rank_traces.h"

#include <cudascope/analysis/collective_pairing.h>
#include <cudascope/analysis/rank_merge.h>
#include <cudascope/analysis/trace_loader.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <string>

using namespace cudascope::analysis;
using namespace cudascope::analysis::testing;

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

// One rank's summary of a four-rank job, from the file PREFIX<rank>.json.
RankSummary four_rank_summary(int rank, const std::string& prefix, std::vector<CommunicatorCollectives> communicators) {
  RankSummary s;
  s.rank = rank;
  s.world_size = 4;
  s.file = prefix + std::to_string(rank) + ".json";
  s.communicators = std::move(communicators);
  return s;
}

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

  RankSummary summary() const { return four_rank_summary(rank_, "kineto_", communicators()); }

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

// Without a flow, a kernel's launch call is the API call inside the op that carries the
// kernel's "correlation": a call of Kineto's older category "Runtime" (before November 2021)
// is one as "cuda_runtime" is, so the kernel reaches its op and the op's group.
TEST(CollectivePairingTest, AKernelWithoutAFlowReachesItsOpThroughARuntimeCallOfEitherCategory) {
  for (const std::string cat : {"cuda_runtime", "Runtime"}) {
    SCOPED_TRACE(cat);
    const std::string text =
        R"({"traceEvents":[)"
        R"({"ph":"X","cat":"cpu_op","name":"record_param_comms","pid":5000,"tid":1,"ts":1000,"dur":8,)"
        R"("args":{"Collective name":"AllReduce","Process Group Name":"1","Process Group Ranks":"[0, 1]","Seq":7}},)"
        R"({"ph":"X","cat":")" + cat + R"(","name":"cudaLaunchKernel","pid":5000,"tid":1,"ts":1002,"dur":3,)"
        R"("args":{"cbid":211,"correlation":77}},)"
        R"j({"ph":"X","cat":"Kernel","name":"ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)","pid":0,"tid":20,)j"
        R"("ts":1010,"dur":20,"args":{"stream":20,"correlation":77}}]})";
    auto loaded = load_trace_text(text, "no flow");
    ASSERT_TRUE(loaded.ok()) << loaded.error;
    const auto communicators = collectives_by_communicator(*loaded.model);
    ASSERT_EQ(communicators.size(), 1u);
    EXPECT_EQ(communicators[0].name, "1");
    EXPECT_EQ(communicators[0].members, "[0, 1]");
    EXPECT_EQ(communicators[0].seq, std::vector<std::int64_t>{7});
  }
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

// --- cudascope's own traces: the NCCL communicator of each call ---

std::vector<std::vector<CommunicatorCollectives>> collectives_of(const std::vector<CudascopeRank>& ranks) {
  std::vector<std::vector<CommunicatorCollectives>> out;
  for (const CudascopeRank& r : ranks) out.push_back(r.communicators());
  return out;
}

RankSummary summary_of(const CudascopeRank& r) { return four_rank_summary(r.rank(), "trace_", r.communicators()); }

std::vector<RankSummary> summaries_of(const std::vector<CudascopeRank>& ranks) {
  std::vector<RankSummary> out;
  for (const CudascopeRank& r : ranks) out.push_back(summary_of(r));
  return out;
}

TEST(NcclCommunicatorPairingTest, EachKernelTakesTheCommunicatorOfTheNcclRangeItWasLaunchedIn) {
  const auto rank2 = nccl_job()[2].communicators();
  ASSERT_EQ(rank2.size(), 2u) << "its tensor- and data-parallel communicators";
  const auto tp = std::find_if(rank2.begin(), rank2.end(), [](const auto& c) { return c.name == hex(tp_communicator(2)); });
  ASSERT_NE(tp, rank2.end()) << rank2[0].name << " " << rank2[1].name;
  EXPECT_EQ(tp->name, "0xf00dfacecafe0123") << "a hash above INT64_MAX reads back whole";
  EXPECT_TRUE(tp->nccl_communicator);
  EXPECT_FALSE(tp->has_sequence);
  EXPECT_EQ(tp->start_ns.size(), 6u) << "two broadcasts and four all-reduces";
  const auto rank1 = nccl_job()[1].communicators();
  ASSERT_EQ(rank1.size(), 2u) << "the all-reduces launched with a runtime call and its flow too";
  for (const auto& c : rank1) EXPECT_EQ(c.start_ns.size(), c.name == hex(tp_communicator(1)) ? 4u : 2u) << c.name;
  EXPECT_EQ(pairing_rule(collectives_of(nccl_job())), CollectivePairing::nccl_communicator_and_order);
}

TEST(NcclCommunicatorPairingTest, CommunicatorAndOrderPairEachOperationOnExactlyItsRanks) {
  const auto collectives = collectives_of(nccl_job());
  auto duration_of = [&](const PairedCollective::Part& part) {
    const CommunicatorCollectives& c = collectives[part.rank][part.communicator];
    return c.end_ns[part.index] - c.start_ns[part.index];
  };
  // By order, rank 0's third collective (data-parallel) meets rank 2's (tensor-parallel).
  const auto by_order = pair_collectives(collectives, CollectivePairing::order);
  ASSERT_GT(by_order.size(), 2u);
  EXPECT_NE(duration_of(by_order[2].parts[0]), duration_of(by_order[2].parts[2])) << "different operations";

  const auto paired = pair_collectives(collectives, CollectivePairing::nccl_communicator_and_order);
  const std::map<std::string, std::set<std::size_t>> members{{hex(tp_communicator(0)), {0, 1}},
                                                             {hex(tp_communicator(2)), {2, 3}},
                                                             {hex(dp_communicator(0)), {0, 2}},
                                                             {hex(dp_communicator(1)), {1, 3}}};
  ASSERT_EQ(paired.size(), 4u + 6u + 2u + 2u);
  for (const PairedCollective& p : paired) {
    ASSERT_EQ(members.count(p.communicator), 1u) << p.communicator;
    EXPECT_EQ(ranks_of(p), members.at(p.communicator)) << "communicator " << p.communicator << " #" << p.key;
    for (const auto& part : p.parts) {
      EXPECT_EQ(collectives[part.rank][part.communicator].name, p.communicator);
      EXPECT_EQ(duration_of(part), duration_of(p.parts.front())) << "one operation: " << p.communicator << " #" << p.key;
    }
  }
}

TEST(NcclCommunicatorPairingTest, StatsTableSaysTheNcclCommunicatorRulePairedThem) {
  const RankReport report = merge_rank_summaries(summaries_of(nccl_job()));
  EXPECT_EQ(report.collective_pairing, CollectivePairing::nccl_communicator_and_order);
  ASSERT_EQ(report.communicators.size(), 4u);
  for (const CommunicatorRow& row : report.communicators) {
    EXPECT_EQ(row.partial, 0) << row.communicator;
    EXPECT_EQ(row.members, "") << "NCCL's range does not name the members";
  }
  const auto dp = std::find_if(report.communicators.begin(), report.communicators.end(),
                               [](const CommunicatorRow& row) { return row.communicator == hex(dp_communicator(0)); });
  ASSERT_NE(dp, report.communicators.end());
  EXPECT_EQ(dp->ranks, "0 2");
  EXPECT_EQ(dp->collectives, 2);
  EXPECT_TRUE(report.notes.empty()) << report.notes.front();

  const std::string table = format_rank_report(report, StatsFormat::table);
  EXPECT_NE(table.find("Collectives across ranks (paired by NCCL communicator and order"), std::string::npos) << table;
  const std::string csv = format_rank_report(report, StatsFormat::csv);
  EXPECT_NE(csv.find("\ncommunicator," + hex(dp_communicator(0)) + ",-,-,0 2,NCCL communicator and order,2,0,"),
            std::string::npos)
      << csv;
  const std::string json = format_rank_report(report, StatsFormat::json);
  EXPECT_NE(json.find("\"collectives_paired_by\":\"NCCL communicator and order\""), std::string::npos) << json;
}

TEST(NcclCommunicatorPairingTest, SummariesKeepThatACommunicatorIsNccls) {
  const RankSummary s = summary_of(nccl_job()[0]);
  const auto read = parse_rank_summary(rank_summary_json(s), "summary");
  ASSERT_TRUE(read.ok()) << read.error;
  ASSERT_EQ(read.summary.communicators.size(), s.communicators.size());
  for (std::size_t i = 0; i < s.communicators.size(); ++i) {
    EXPECT_EQ(read.summary.communicators[i].name, s.communicators[i].name);
    EXPECT_TRUE(read.summary.communicators[i].nccl_communicator);
  }
  std::vector<RankSummary> summaries;
  for (const CudascopeRank& r : nccl_job()) {
    summaries.push_back(parse_rank_summary(rank_summary_json(summary_of(r)), "summary").summary);
  }
  EXPECT_EQ(merge_rank_summaries(summaries).collective_pairing, CollectivePairing::nccl_communicator_and_order);
}

// A rank's NCCL kernels (cat "kernel"), in start order: events of the model the rank was read into.
std::vector<std::uint32_t> nccl_kernels(const TraceModel& model) {
  std::vector<std::uint32_t> kernels;
  for (std::size_t i = 0; i < model.event_count(); ++i)
    if (model.cat(model.event(i)) == "kernel" && model.name(model.event(i)).starts_with("ncclDevKernel"))
      kernels.push_back(static_cast<std::uint32_t>(i));
  std::stable_sort(kernels.begin(), kernels.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return model.event(a).ts_ns < model.event(b).ts_ns; });
  return kernels;
}

// What the viewer shows of a selected kernel: its communicator, its place on it, who shares it.
TEST(NcclCommunicatorPairingTest, AKernelsKeyNamesItsCommunicatorItsPlaceThereAndTheRanksSharingIt) {
  const std::vector<CudascopeRank> job = nccl_job();
  std::vector<TraceLoadResult> models;
  std::vector<RankCollectives> ranks;
  for (const CudascopeRank& r : job) {
    models.push_back(r.load());
    ASSERT_TRUE(models.back().ok());
    ranks.push_back(collectives_by_communicator(*models.back().model));
  }
  const auto rule = CollectivePairing::nccl_communicator_and_order;
  // Rank 2's sixth kernel is its second step's first all-reduce: its tensor-parallel
  // communicator's fifth collective (after a broadcast and two all-reduces, then a broadcast).
  const std::vector<std::uint32_t> rank2 = nccl_kernels(*models[2].model);
  ASSERT_EQ(rank2.size(), 8u);
  const auto tp = collective_key(ranks, 2, rank2[5], rule);
  ASSERT_TRUE(tp.has_value());
  EXPECT_EQ(tp->communicator, "0xf00dfacecafe0123");
  EXPECT_EQ(tp->position, 4u);
  EXPECT_EQ(tp->count, 6u);
  EXPECT_EQ(tp->key, 4);
  EXPECT_EQ(tp->ranks, (std::vector<std::size_t>{2, 3}));
  // Rank 0's sixth is its second data-parallel all-reduce, shared with rank 2.
  const auto dp = collective_key(ranks, 0, nccl_kernels(*models[0].model)[5], rule);
  ASSERT_TRUE(dp.has_value());
  EXPECT_EQ(dp->communicator, hex(dp_communicator(0)));
  EXPECT_EQ(dp->position, 1u);
  EXPECT_EQ(dp->count, 2u);
  EXPECT_EQ(dp->ranks, (std::vector<std::size_t>{0, 2}));

  // The key is the one pair_collectives() joins the ranks' parts by: rank 3's part of that
  // operation is its own sixth kernel.
  const auto rank3 = collective_key(ranks, 3, nccl_kernels(*models[3].model)[5], rule);
  ASSERT_TRUE(rank3.has_value());
  EXPECT_EQ(rank3->communicator, tp->communicator);
  EXPECT_EQ(rank3->key, tp->key);
  // By order, the same kernel is its rank's sixth collective of eight, shared by every rank.
  const auto by_order = collective_key(ranks, 2, rank2[5], CollectivePairing::order);
  ASSERT_TRUE(by_order.has_value());
  EXPECT_EQ(by_order->communicator, "");
  EXPECT_EQ(by_order->key, 5);
  EXPECT_EQ(by_order->count, 8u);
  EXPECT_EQ(by_order->ranks, (std::vector<std::size_t>{0, 1, 2, 3}));
  // Not a collective's kernel, or a rank past the last: none.
  EXPECT_FALSE(collective_key(ranks, 2, rank2[5] == 0 ? 1 : 0, rule).has_value());
  EXPECT_FALSE(collective_key(ranks, 4, rank2[5], rule).has_value());
}

// A kernel launched outside its NCCL range names no communicator: under the communicator
// rule it has no key (it is left unpaired); by order it still has one.
TEST(NcclCommunicatorPairingTest, AKernelOfNoCommunicatorHasNoKeyUnderTheCommunicatorRule) {
  CudascopeRank rank(0);
  rank.collective(dp_communicator(0), "AllReduce", 1);
  rank.collective(dp_communicator(0), "AllReduce", 2, Launch::outside_range);
  const TraceLoadResult loaded = rank.load();
  ASSERT_TRUE(loaded.ok());
  const std::vector<RankCollectives> ranks{collectives_by_communicator(*loaded.model)};
  const std::vector<std::uint32_t> kernels = nccl_kernels(*loaded.model);
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_TRUE(collective_key(ranks, 0, kernels[0], CollectivePairing::nccl_communicator_and_order).has_value());
  EXPECT_FALSE(collective_key(ranks, 0, kernels[1], CollectivePairing::nccl_communicator_and_order).has_value());
  EXPECT_EQ(collective_key(ranks, 0, kernels[1], CollectivePairing::order)->key, 1);
}

// Several ranks' traces in one model (as the viewer merges them; each rank's pids its own):
// every rank numbers its launches' correlation ids from the same start, so a kernel must be
// matched with a launch of its own rank, or it takes another rank's communicator.
TEST(NcclCommunicatorPairingTest, RanksInOneModelEachFindTheirOwnCommunicators) {
  const std::vector<CudascopeRank> job = nccl_job();
  nlohmann::json merged = {{"traceEvents", nlohmann::json::array()}};
  std::vector<RankCollectives> separately(4);
  for (int r : {0, 2, 3}) {  // rank 1's runtime launches carry flow ids, which repeat too
    const nlohmann::json trace = nlohmann::json::parse(job[std::size_t(r)].json());
    for (const auto& e : trace["traceEvents"]) merged["traceEvents"].push_back(e);
    separately[std::size_t(r)] = job[std::size_t(r)].communicators();
  }
  const TraceLoadResult loaded = load_trace_text(merged.dump(), "ranks 0 2 3");
  ASSERT_TRUE(loaded.ok()) << loaded.error;
  const TraceModel& model = *loaded.model;
  std::vector<int> process_rank;  // a GPU's device is its rank; the host's pid is 4000 + rank
  for (const TraceModel::Process& p : model.processes()) process_rank.push_back(p.device >= 0 ? p.device : int(p.pid) - 4000);
  const std::vector<RankCollectives> by_rank = collectives_by_rank(model, process_rank, 4);
  ASSERT_EQ(by_rank.size(), 4u);
  EXPECT_TRUE(by_rank[1].empty());
  for (int r : {0, 2, 3}) {
    const RankCollectives& got = by_rank[std::size_t(r)];
    const RankCollectives& want = separately[std::size_t(r)];
    ASSERT_EQ(got.size(), want.size()) << "rank " << r;
    for (std::size_t c = 0; c < got.size(); ++c) {
      EXPECT_EQ(got[c].name, want[c].name) << "rank " << r;
      EXPECT_EQ(got[c].start_ns, want[c].start_ns) << "rank " << r << " " << got[c].name;
      for (std::uint32_t kernel : got[c].kernel) EXPECT_EQ(process_rank[model.tracks()[model.event(kernel).track].process], r);
    }
  }
}

// A kernel launched outside its call's range (by ncclGroupEnd, for calls in a group) names no
// communicator: it stays unpaired, and says why; the others keep their pairing.
TEST(NcclCommunicatorPairingTest, AKernelLaunchedOutsideItsNcclRangeIsLeftOutNotEveryPairing) {
  std::vector<CudascopeRank> job = nccl_job();
  job[0].collective(dp_communicator(0), "AllReduce", 99, Launch::outside_range);
  const RankReport report = merge_rank_summaries(summaries_of(job));
  EXPECT_EQ(report.collective_pairing, CollectivePairing::nccl_communicator_and_order);
  ASSERT_EQ(report.communicators.size(), 4u);
  ASSERT_EQ(report.notes.size(), 1u);
  EXPECT_EQ(report.notes[0], "1 communication kernels were launched outside an NCCL range naming their communicator "
                             "(grouped calls, CUDA graphs, NCCL before 2.25): left unpaired");
}

// NCCL before 2.25 names no communicator in its ranges: cudascope's traces pair by order, as
// before, and say so.
TEST(NcclCommunicatorPairingTest, RangesWithoutACommunicatorFallBackToOrder) {
  const RankReport report = merge_rank_summaries(summaries_of(nccl_job(false)));
  EXPECT_EQ(report.collective_pairing, CollectivePairing::order);
  ASSERT_EQ(report.communicators.size(), 1u);
  EXPECT_EQ(report.communicators[0].communicator, "all");
  EXPECT_EQ(report.communicators[0].collectives, 6);
  ASSERT_FALSE(report.notes.empty());
  EXPECT_NE(report.notes.back().find("nor NCCL communicator"), std::string::npos) << report.notes.back();
}

}  // namespace
