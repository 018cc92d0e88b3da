// The cost of a scrape of a wrapped process's live metrics (ProfileMetrics::render) when the
// process has launched 10,000 distinct kernel names, as a long PyTorch job with many shapes
// and fused kernels does: names shaped like real ones (templated ATen, cuBLAS, Triton and
// NCCL kernels with varying parameters), times drawn from a heavy-tailed distribution, NVTX
// phases around them. Target: at most 5 ms per scrape with a bounded series count.
#include <cudascope/metrics/profile_metrics.h>
#include <cudascope/profiler/record.h>

#include <benchmark/benchmark.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

namespace profiler = cudascope::profiler;

std::vector<std::string> kernel_names(std::size_t count, std::mt19937_64& rng) {
  static const char* const shapes[] = {
      "void at::native::vectorized_elementwise_kernel<%d, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, %d> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, %d>)",
      "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize%dx%dx64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
      "triton_per_fused__to_copy_add_mean_mul_pow_rsqrt_%d_%d",
      "ncclDevKernel_AllReduce_Sum_bf16_RING_LL%d(ncclDevKernelArgsStorage<%d>)",
      "void at::native::reduce_kernel<%d, %d, at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, float, 4>)",
      "void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_%dx%d_128x2_tn_align8>(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8::Params)",
  };
  std::uniform_int_distribution<int> shape(0, 5), number(1, 4096);
  std::vector<std::string> names;
  names.reserve(count);
  char buffer[512];
  for (std::size_t i = 0; i < count; ++i) {
    std::snprintf(buffer, sizeof buffer, shapes[shape(rng)], number(rng), number(rng), number(rng));
    names.push_back(std::string(buffer) + "_" + std::to_string(i));  // distinct even when the draws repeat
  }
  return names;
}

profiler::Record kernel(const char* name, std::uint64_t start, std::uint64_t ns, std::uint32_t correlation) {
  profiler::Record r = profiler::make_device_record(profiler::RecordKind::kKernel, 0, 7, start, start + ns, correlation);
  r.u.kernel.name = name;
  return r;
}

void BM_ScrapeWithDistinctKernelNames(benchmark::State& state) {
  const auto count = static_cast<std::size_t>(state.range(0));
  std::mt19937_64 rng(7);
  static std::vector<std::string> names;  // records point at the names for the process's life
  names = kernel_names(count, rng);
  std::lognormal_distribution<double> duration(9.0, 1.5);  // ns: a median of ~8 us, a long tail
  std::vector<profiler::Record> records;
  std::uint64_t t = 0;
  for (int round = 0; round < 5; ++round) {
    for (std::size_t i = 0; i < count; ++i) {
      const auto ns = static_cast<std::uint64_t>(duration(rng)) + 1;
      records.push_back(kernel(names[i].c_str(), t, ns, static_cast<std::uint32_t>(records.size() + 1)));
      t += ns + 100;
    }
  }
  cudascope::metrics::ProfileMetricsOptions options;
  options.labels.pid = "4242";
  options.labels.rank = "0";
  cudascope::metrics::ProfileMetrics live(options);
  live.consume(records.data(), records.size());
  live.flushed();
  std::size_t bytes = 0;
  for (auto _ : state) {
    const std::string text = live.render();
    bytes = text.size();
    benchmark::DoNotOptimize(text.data());
  }
  state.counters["exposition_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_ScrapeWithDistinctKernelNames)->Arg(100)->Arg(10000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
