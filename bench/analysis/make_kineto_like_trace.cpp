// Writes a large trace shaped like torch.profiler's (Kineto) for the trace benchmarks:
//   make_kineto_like_trace OUT.json [--bytes N] [--seed S] [--names-seed K]
// --names-seed draws the kernel names from their own generator seeded with K, so two traces
// with different --seed and one --names-seed are one program's two runs: the same names, other
// durations, sizes and order (the pair `cudascope diff` is benchmarked on).
// Training steps on 4 CPU threads and 2 GPUs with 2 streams each: ProfilerStep annotations,
// python_function frames, nested cpu_ops (aten::linear > aten::addmm > ...), cudaLaunchKernel
// and cuLaunchKernel calls with ac2g flows to kernels (f first, as Kineto writes them),
// copies and memsets with bytes, gpu_user_annotations, ~20,000 distinct kernel names, args
// as Kineto writes them (External id, correlation, grid, block, Input Dims), metadata at the
// end, written compactly (one event a line, no spaces). Stops after about N bytes (default
// 1 GiB), closing the JSON.
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

class Out {
 public:
  explicit Out(std::FILE* file) : file_(file) { buffer_.reserve(kFlushAt + 4096); }
  ~Out() { flush(); }
  Out& operator<<(const char* text) {
    buffer_ += text;
    return maybe_flush();
  }
  Out& operator<<(const std::string& text) {
    buffer_ += text;
    return maybe_flush();
  }
  Out& operator<<(std::int64_t value) {
    char digits[24];
    auto [end, ec] = std::to_chars(digits, digits + sizeof digits, value);
    buffer_.append(digits, end);
    return *this;
  }
  // Microseconds with three decimals, from nanoseconds.
  Out& us(std::int64_t ns) {
    *this << ns / 1000;
    char fraction[5] = {'.', static_cast<char>('0' + ns / 100 % 10), static_cast<char>('0' + ns / 10 % 10),
                        static_cast<char>('0' + ns % 10), 0};
    buffer_ += fraction;
    return *this;
  }
  std::uint64_t written() const { return written_ + buffer_.size(); }
  void flush() {
    std::fwrite(buffer_.data(), 1, buffer_.size(), file_);
    written_ += buffer_.size();
    buffer_.clear();
  }

 private:
  static constexpr std::size_t kFlushAt = 8 << 20;
  Out& maybe_flush() {
    if (buffer_.size() >= kFlushAt) flush();
    return *this;
  }
  std::FILE* file_;
  std::string buffer_;
  std::uint64_t written_ = 0;
};

std::vector<std::string> kernel_names(std::mt19937_64& rng, int count) {
  static const char* kOps[] = {"FillFunctor", "AddFunctor", "MulFunctor", "GeluCUDAKernelImpl", "sum_functor", "max_functor",
                               "tn", "nt", "nn", "layer_norm", "softmax", "native_dropout"};
  std::vector<std::string> names;
  for (int i = 0; i < count; ++i) {
    const std::string op = kOps[rng() % 12];
    const std::string a = std::to_string(rng() % 512), b = std::to_string(rng() % 64), n = std::to_string(i);
    switch (i % 5) {
      case 0:
        names.push_back("void at::native::vectorized_elementwise_kernel<4, at::native::" + op + "<float>, std::array<char*, " + b +
                        "ul> >(int, at::native::" + op + "<float>, std::array<char*, " + b + "ul>) [" + n + "]");
        break;
      case 1:
        names.push_back("void at::native::reduce_kernel<" + a + ", 4, at::native::ReduceOp<float, at::native::" + op +
                        "<float>, unsigned int, float, " + b + "> >(at::native::ReduceOp<float>) [" + n + "]");
        break;
      case 2:
        names.push_back("sm90_xmma_gemm_f32f32_tf32f32_f32_" + op + "_n_tilesize" + a + "x128x32_warpgroupsize" + b +
                        "x1x1_execute_segment_k_off_kernel__5x_cublas_" + n);
        break;
      case 3:
        names.push_back("void cutlass::Kernel2<cutlass_80_simt_sgemm_" + op + "_" + a + "x" + b + "_8x5_nn_align1>(Params) [" + n + "]");
        break;
      default: names.push_back("triton_poi_fused_" + op + "_add_mul_" + a + "_" + b + "_" + n); break;
    }
  }
  return names;
}

struct Writer {
  Out& out;
  std::mt19937_64 rng;
  std::vector<std::string> kernels;
  std::int64_t external = 1, correlation = 1;
  bool first = true;
  std::uint64_t events = 0;

  void begin(const char* ph, const char* cat, const std::string& name, std::int64_t pid, std::int64_t tid, std::int64_t ts) {
    out << (first ? "\n{" : ",\n{");
    first = false;
    ++events;
    out << "\"ph\":\"" << ph << "\",\"cat\":\"" << cat << "\",\"name\":\"" << name << "\",\"pid\":" << pid << ",\"tid\":" << tid
        << ",\"ts\":";
    out.us(ts);
  }
  void complete(const char* cat, const std::string& name, std::int64_t pid, std::int64_t tid, std::int64_t ts, std::int64_t dur) {
    begin("X", cat, name, pid, tid, ts);
    out << ",\"dur\":";
    out.us(dur);
  }
  void flow(const char* ph, std::int64_t id, std::int64_t pid, std::int64_t tid, std::int64_t ts) {
    out << ",\n{\"ph\":\"" << ph << "\",\"id\":" << id << ",\"pid\":" << pid << ",\"tid\":" << tid << ",\"ts\":";
    out.us(ts);
    out << ",\"cat\":\"ac2g\",\"name\":\"ac2g\"" << (ph[0] == 'f' ? ",\"bp\":\"e\"}" : "}");
    ++events;
  }

  // One op on a CPU thread launching work on a GPU stream; returns the op's end.
  std::int64_t op(std::int64_t pid, std::int64_t tid, std::int64_t ts, int device, int stream, std::int64_t& gpu_clock) {
    const std::int64_t ext = external++;
    const std::int64_t corr = correlation++;
    const int kind = static_cast<int>(rng() % 100);
    complete("cpu_op", "aten::linear", pid, tid, ts, 9000);
    out << ",\"args\":{\"External id\":" << ext << ",\"Input Dims\":[[64," << static_cast<std::int64_t>(rng() % 4096)
        << "],[4096]],\"Ev Idx\":" << ext << "}}";
    complete("cpu_op", kind < 80 ? "aten::addmm" : "aten::copy_", pid, tid, ts + 800, 7000);
    out << ",\"args\":{\"External id\":" << ext + 1 << "}}";
    const bool copy = kind >= 80 && kind < 90;
    const bool fill = kind >= 90 && kind < 94;
    const bool driver = kind >= 94;
    const std::int64_t launch = ts + 2000;
    complete(driver ? "cuda_driver" : "cuda_runtime",
             copy ? "cudaMemcpyAsync" : fill ? "cudaMemsetAsync" : driver ? "cuLaunchKernel" : "cudaLaunchKernel", pid, tid, launch, 4000);
    out << ",\"args\":{\"External id\":" << ext << ",\"cbid\":211,\"correlation\":" << corr << "}}";
    gpu_clock = std::max(gpu_clock, launch + 5000) + static_cast<std::int64_t>(rng() % 3000);
    const std::int64_t gpu_dur = 1000 + static_cast<std::int64_t>(rng() % 40000);
    flow("f", corr, device, stream, gpu_clock);
    if (copy || fill) {
      complete(copy ? "gpu_memcpy" : "gpu_memset", copy ? "Memcpy HtoD (Pageable -> Device)" : "Memset (Device)", device, stream,
               gpu_clock, gpu_dur);
      out << ",\"args\":{\"External id\":" << ext << ",\"device\":" << device << ",\"stream\":" << stream
          << ",\"correlation\":" << corr << ",\"bytes\":" << static_cast<std::int64_t>(4096 << (rng() % 12)) << "}}";
    } else {
      const std::string& name = kernels[rng() % kernels.size()];
      complete("kernel", name, device, stream, gpu_clock, gpu_dur);
      out << ",\"args\":{\"External id\":" << ext << ",\"device\":" << device << ",\"stream\":" << stream
          << ",\"correlation\":" << corr << ",\"grid\":[" << static_cast<std::int64_t>(1 + rng() % 1024)
          << ",1,1],\"block\":[256,1,1]}}";
    }
    flow("s", corr, pid, tid, launch);
    gpu_clock += gpu_dur;
    return ts + 10000;
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0) {
    std::fprintf(stderr, "usage: %s OUT.json [--bytes N] [--seed S] [--names-seed K]\n", argv[0]);
    return argc < 2 ? 2 : 0;
  }
  std::uint64_t target = 1ull << 30;
  std::uint64_t seed = 1;
  std::int64_t names_seed = -1;  // -1: names from the writer's generator, as before the option
  for (int i = 2; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--bytes") == 0) target = std::strtoull(argv[i + 1], nullptr, 10);
    else if (std::strcmp(argv[i], "--seed") == 0) seed = std::strtoull(argv[i + 1], nullptr, 10);
    else if (std::strcmp(argv[i], "--names-seed") == 0) names_seed = std::strtoll(argv[i + 1], nullptr, 10);
  }
  std::FILE* file = std::fopen(argv[1], "wb");
  if (file == nullptr) {
    std::perror(argv[1]);
    return 1;
  }
  Out out(file);
  Writer w{out, std::mt19937_64(seed), {}};
  if (names_seed < 0) {
    w.kernels = kernel_names(w.rng, 20000);
  } else {
    std::mt19937_64 names_rng(static_cast<std::uint64_t>(names_seed));
    w.kernels = kernel_names(names_rng, 20000);
  }
  const std::int64_t pid = 4242;
  const std::int64_t threads[4] = {4242, 4250, 4251, 4252};
  out << "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n    {\"id\": 0, \"name\": \"NVIDIA H100 80GB HBM3\", "
         "\"totalGlobalMem\": 85017493504, \"computeMajor\": 9, \"computeMinor\": 0, \"numSms\": 132},\n    {\"id\": 1, \"name\": "
         "\"NVIDIA H100 80GB HBM3\", \"totalGlobalMem\": 85017493504, \"computeMajor\": 9, \"computeMinor\": 0, \"numSms\": 132}\n  ],\n"
         "  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 0, \"world_size\": 2},\n"
         "  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": 1790857026000000000,\n  \"traceEvents\": [";
  std::int64_t clock = 4554323274000000;  // ns, as Kineto's microsecond timestamps are large
  std::int64_t gpu_clock[4] = {clock, clock, clock, clock};
  std::int64_t step = 0;
  while (out.written() < target) {
    // One step: each thread runs a python frame per 8 layers, each layer a launching op.
    const int layers = 64;
    const std::int64_t step_start = clock;
    const std::int64_t step_length = layers * 10000 + 20000;
    w.complete("user_annotation", "ProfilerStep#" + std::to_string(step), pid, threads[0], step_start, step_length);
    out << ", \"args\": {\"External id\": " << w.external++ << "}}";
    for (int t = 0; t < 4; ++t) {
      std::int64_t ts = step_start + 1000 + t * 100;
      for (int layer = 0; layer < layers; ++layer) {
        if (layer % 8 == 0) {
          w.complete("python_function", "nn.Module: Linear_" + std::to_string(layer / 8), pid, threads[t], ts, 8 * 10000 + 100);
          out << ", \"args\": {\"Python id\": " << layer << ", \"Python parent id\": " << t << "}}";
          ts += 100;
        }
        const int lane = (t + layer) % 4;  // 2 devices x 2 streams
        const int device = lane / 2;
        const int stream = lane % 2 == 0 ? 7 : 13;
        ts = w.op(pid, threads[t], ts, device, stream, gpu_clock[lane]);
      }
    }
    for (int lane = 0; lane < 4; ++lane) {
      w.complete("gpu_user_annotation", "ProfilerStep#" + std::to_string(step), lane / 2, lane % 2 == 0 ? 7 : 13, step_start + 5000,
                 gpu_clock[lane] - step_start - 5000);
      out << ", \"args\": {\"External id\": 0}}";
    }
    clock = step_start + step_length + 1000;
    for (std::int64_t& g : gpu_clock) g = std::max(g, clock);
    ++step;
  }
  // Metadata at the end, as Kineto writes it.
  for (int device = 0; device < 2; ++device) {
    out << ",\n  {\"name\": \"process_name\", \"ph\": \"M\", \"ts\": 0.000, \"pid\": " << std::int64_t{device}
        << ", \"tid\": 0, \"args\": {\"name\": \"python3\"}}";
    out << ",\n  {\"name\": \"process_labels\", \"ph\": \"M\", \"ts\": 0.000, \"pid\": " << std::int64_t{device}
        << ", \"tid\": 0, \"args\": {\"labels\": \"GPU " << std::int64_t{device} << "\"}}";
    for (const int stream : {7, 13}) {
      out << ",\n  {\"name\": \"thread_name\", \"ph\": \"M\", \"ts\": 0.000, \"pid\": " << std::int64_t{device}
          << ", \"tid\": " << std::int64_t{stream} << ", \"args\": {\"name\": \"stream " << std::int64_t{stream} << " \"}}";
    }
  }
  out << ",\n  {\"name\": \"process_name\", \"ph\": \"M\", \"ts\": 0.000, \"pid\": " << pid << ", \"tid\": 0, \"args\": {\"name\": \"python3\"}}";
  out << "\n],\n  \"traceName\": \"generated\"\n}\n";
  out.flush();
  std::fclose(file);
  std::fprintf(stderr, "%s: %llu bytes, %llu events, %lld steps\n", argv[1], static_cast<unsigned long long>(out.written()),
               static_cast<unsigned long long>(w.events + 7), static_cast<long long>(step));
  return 0;
}
