// jiterator (torch.cuda.jiterator): results against a host computation of the same function,
// on the process's backend (sim in CI: the host compiler; cuda on the GPU machine: NVRTC).
#include "kernel_recorder.h"
#include "test_support.h"

#include "jiterator/jit_launch.h"
#include "jiterator/jit_source.h"
#include "jiterator/nvrtc_compiler.h"
#include "tool_loader.h"

#include <cmath>
#include <functional>
#include <mutex>
#include <thread>

namespace cuda = cudascope::cuda;
namespace jit = cudascope::cuda::jiterator;
using cudascope::DType;
using cudascope::Device;
using cudascope::Tensor;
using cudascope::TensorOptions;
using ::testing::HasSubstr;

namespace {

constexpr const char* kAxpy = "template <typename T> T my_kernel(T x, T y, T alpha) { return -x + alpha * y; }";

TensorOptions on_cuda(DType dtype = DType::kFloat32, int device = 0) {
  return TensorOptions{}.with_dtype(dtype).with_device(Device::cuda(device));
}

// Row-major values start, start + 1, ... as a CUDA tensor of `sizes`.
Tensor counting(std::vector<std::int64_t> sizes, DType dtype = DType::kFloat32, double start = 0) {
  std::int64_t numel = 1;
  for (std::int64_t size : sizes) numel *= size;
  return cudascope::arange(start, start + static_cast<double>(numel), 1, on_cuda(dtype)).view(sizes);
}

// The value at row-major `index` of `sizes` read through broadcasting from a row-major
// `values` of `from` sizes.
double broadcast_read(const std::vector<double>& values, const std::vector<std::int64_t>& from,
                      const std::vector<std::int64_t>& sizes, std::int64_t index) {
  std::int64_t offset = 0, stride = 1;
  for (std::size_t d = sizes.size(); d-- > 0;) {
    const std::int64_t coordinate = index % sizes[d];
    index /= sizes[d];
    const std::size_t lead = sizes.size() - from.size();
    if (d < lead) continue;
    if (from[d - lead] != 1) offset += coordinate * stride;
    stride *= from[d - lead];
  }
  return values[static_cast<std::size_t>(offset)];
}

std::vector<double> host_map(const std::vector<Tensor>& inputs, const std::vector<std::int64_t>& sizes,
                             const std::function<double(const std::vector<double>&)>& f) {
  std::vector<std::vector<double>> values;
  for (const Tensor& t : inputs) values.push_back(t.to_vector());
  std::int64_t numel = 1;
  for (std::int64_t size : sizes) numel *= size;
  std::vector<double> out;
  for (std::int64_t i = 0; i < numel; ++i) {
    std::vector<double> args;
    for (std::size_t k = 0; k < inputs.size(); ++k) args.push_back(broadcast_read(values[k], inputs[k].sizes(), sizes, i));
    out.push_back(f(args));
  }
  return out;
}

using cudascope::testing::KernelRecorder;

// `code` made unique in this process, so a test that counts compiles sees its own first
// compile also under --gtest_repeat (compiled kernels live as long as the process).
std::string fresh(const std::string& code) {
  static int runs = 0;
  return code + "\n// run " + std::to_string(++runs);
}

template <typename Fn>
cuda::Error error_of(Fn&& fn) {
  try {
    fn();
  } catch (const cuda::Error& e) {
    return e;
  }
  ADD_FAILURE() << "no cuda::Error was thrown";
  return cuda::Error(0, "", "", 0);
}

}  // namespace

TEST(JiteratorTest, BinaryFunctionUsesScalarDefaultsAndOverrides) {
  const jit::JitFunction fn = jit::create_jit_fn(kAxpy, "", {{"alpha", 1.0}});
  EXPECT_EQ(fn.name(), "my_kernel");
  const Tensor a = counting({3, 4});
  const Tensor b = counting({3, 4}, DType::kFloat32, 10);
  const auto axpy = [](double alpha) {
    return [alpha](const std::vector<double>& v) {
      return static_cast<double>(-static_cast<float>(v[0]) + static_cast<float>(alpha) * static_cast<float>(v[1]));
    };
  };
  EXPECT_EQ(fn({a, b}).to_vector(), host_map({a, b}, {3, 4}, axpy(1.0)));
  EXPECT_EQ(fn({a, b}, {{"alpha", 3.14}}).to_vector(), host_map({a, b}, {3, 4}, axpy(3.14)));
  const Tensor out = fn({a, b});
  EXPECT_EQ(out.dtype(), DType::kFloat32);
  EXPECT_EQ(out.sizes(), (std::vector<std::int64_t>{3, 4}));
  EXPECT_EQ(out.device(), Device::cuda(0));
}

TEST(JiteratorTest, UnaryFunctionCallsMathFunctions) {
  const auto fn = jit::create_jit_fn("template <typename T> T soft(T x) { return x / (T(1) + exp(-x)); }");
  const Tensor x = counting({17}, DType::kFloat32, -8);
  const std::vector<double> got = fn({x}).to_vector();
  const std::vector<double> want = host_map({x}, {17}, [](const std::vector<double>& v) { return v[0] / (1 + std::exp(-v[0])); });
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5 * (1 + std::abs(want[i]))) << i;
}

TEST(JiteratorTest, TernaryFunctionTakesScalarsInDeclaredOrder) {
  const auto fn = jit::create_jit_fn("template <typename T> T fma3(T x, T y, T z, T alpha, T beta) { return alpha * x * y + beta * z; }",
                                     "", {{"alpha", 2.0}, {"beta", -1.0}});
  const Tensor x = counting({5});
  const Tensor y = counting({5}, DType::kFloat32, 1);
  const Tensor z = counting({5}, DType::kFloat32, 100);
  EXPECT_EQ(fn({x, y, z}).to_vector(),
            host_map({x, y, z}, {5}, [](const std::vector<double>& v) { return 2 * v[0] * v[1] - v[2]; }));
  EXPECT_EQ(fn({x, y, z}, {{"beta", 0.5}}).to_vector(),
            host_map({x, y, z}, {5}, [](const std::vector<double>& v) { return 2 * v[0] * v[1] + 0.5 * v[2]; }));
}

TEST(JiteratorTest, BroadcastsSizeOneDimensions) {
  const auto fn = jit::create_jit_fn("template <typename T> T mul(T x, T y) { return x * 10 + y; }");
  const Tensor column = counting({4, 1});
  const Tensor row = counting({1, 5}, DType::kFloat32, 100);
  const Tensor out = fn({column, row});
  EXPECT_EQ(out.sizes(), (std::vector<std::int64_t>{4, 5}));
  EXPECT_EQ(out.to_vector(), host_map({column, row}, {4, 5}, [](const std::vector<double>& v) { return v[0] * 10 + v[1]; }));
  // Fewer dimensions broadcast from the right; a 0-dim tensor broadcasts everywhere.
  const Tensor scalar = cudascope::full({}, 0.5, on_cuda());
  const Tensor vector = counting({5});
  const Tensor out3 = fn({counting({2, 3, 5}), vector});
  EXPECT_EQ(out3.to_vector(), host_map({counting({2, 3, 5}), vector}, {2, 3, 5},
                                       [](const std::vector<double>& v) { return v[0] * 10 + v[1]; }));
  EXPECT_EQ(fn({scalar, vector}).to_vector(), (std::vector<double>{5, 6, 7, 8, 9}));
}

TEST(JiteratorTest, RefusesShapesThatDoNotBroadcast) {
  const auto fn = jit::create_jit_fn("template <typename T> T add2(T x, T y) { return x + y; }");
  const cuda::Error e = error_of([&] { fn({counting({4, 3}), counting({4, 2})}); });
  EXPECT_EQ(e.code(), cuda::error_code::kInvalidValue);
  EXPECT_THAT(e.what(), HasSubstr("[4, 2] does not broadcast"));
}

TEST(JiteratorTest, ReadsNonContiguousViews) {
  const auto fn = jit::create_jit_fn("template <typename T> T sub(T x, T y) { return x - 2 * y; }");
  const Tensor base = counting({4, 6});
  const Tensor columns = base.narrow(1, 1, 3);  // strides [6, 1], not contiguous
  ASSERT_FALSE(columns.is_contiguous());
  const Tensor other = counting({4, 8}, DType::kFloat32, 50).narrow(1, 2, 3);
  const auto want = [](const std::vector<double>& v) { return v[0] - 2 * v[1]; };
  EXPECT_EQ(fn({columns, other}).to_vector(), host_map({columns, other}, {4, 3}, want));
  // A strided view broadcast against a contiguous one.
  const Tensor row = counting({1, 3}, DType::kFloat32, 7);
  EXPECT_EQ(fn({columns, row}).to_vector(), host_map({columns, row}, {4, 3}, want));
  // Rows of a larger tensor: contiguous dimensions merge into a flat kernel.
  const Tensor rows = base.narrow(0, 1, 2);
  EXPECT_EQ(fn({rows, rows}).to_vector(), host_map({rows, rows}, {2, 6}, want));
}

TEST(JiteratorTest, IntegerDtypesComputeInTheirOwnType) {
  const auto fn = jit::create_jit_fn("template <typename T> T mix(T x, T y, T k) { return x * k + y / 3 + x % 5; }", "",
                                     {{"k", 7}});
  for (DType dtype : {DType::kInt32, DType::kInt64, DType::kUInt8}) {
    SCOPED_TRACE(cudascope::dtype_name(dtype));
    const Tensor x = counting({12}, dtype);
    const Tensor y = counting({12}, dtype, 20);
    const Tensor out = fn({x, y});
    EXPECT_EQ(out.dtype(), dtype);
    EXPECT_EQ(out.to_vector(), host_map({x, y}, {12}, [dtype](const std::vector<double>& v) {
                const auto x = static_cast<std::int64_t>(v[0]), y = static_cast<std::int64_t>(v[1]);
                const std::int64_t r = x * 7 + y / 3 + x % 5;
                return static_cast<double>(dtype == DType::kUInt8 ? r % 256 : r);
              }));
  }
  // int64 beyond 32 bits stays exact.
  const Tensor big = cudascope::full({2}, 3e12, on_cuda(DType::kInt64));
  EXPECT_EQ(fn({big, big}).to_vector(), std::vector<double>(2, 3e12 * 7 + 1e12 + 0));
}

TEST(JiteratorTest, BoolInputsGiveBoolOutputs) {
  const auto fn = jit::create_jit_fn("template <typename T> T either(T x, T y) { return x || y; }");
  const Tensor x = cudascope::arange(0, 4, 1, on_cuda(DType::kInt32)).view({4});
  const Tensor a = cudascope::full({4}, 0, on_cuda(DType::kBool));
  const Tensor b = cudascope::full({4}, 1, on_cuda(DType::kBool));
  const Tensor out = fn({a, b});
  EXPECT_EQ(out.dtype(), DType::kBool);
  EXPECT_EQ(out.to_vector(), std::vector<double>(4, 1));
  EXPECT_EQ(fn({a, a}).to_vector(), std::vector<double>(4, 0));
  // bool with int32 promotes to int32.
  EXPECT_EQ(fn({a, x}).dtype(), DType::kInt32);
}

TEST(JiteratorTest, PromotesInputsToTheirCommonDtype) {
  const auto fn = jit::create_jit_fn("template <typename T> T half_sum(T x, T y) { return (x + y) / 2; }");
  const Tensor ints = counting({6}, DType::kInt32);
  const Tensor floats = counting({6}, DType::kFloat32, 1);
  const Tensor out = fn({ints, floats});
  EXPECT_EQ(out.dtype(), DType::kFloat32);
  EXPECT_EQ(out.to_vector(), (std::vector<double>{0.5, 1.5, 2.5, 3.5, 4.5, 5.5}));
  const Tensor longs = counting({6}, DType::kInt64, 1);
  const Tensor int_out = fn({ints, longs});
  EXPECT_EQ(int_out.dtype(), DType::kInt64);
  EXPECT_EQ(int_out.to_vector(), (std::vector<double>{0, 1, 2, 3, 4, 5}));  // integer division
  EXPECT_EQ(cuda::detail::promote_types(DType::kFloat16, DType::kBFloat16), DType::kFloat32);
  EXPECT_EQ(cuda::detail::promote_types(DType::kInt64, DType::kFloat16), DType::kFloat16);
  EXPECT_EQ(cuda::detail::promote_types(DType::kBool, DType::kUInt8), DType::kUInt8);
}

TEST(JiteratorTest, HalfPrecisionComputesInFloatAndRoundsOnStore) {
  const auto fn = jit::create_jit_fn("template <typename T> T scale(T x, T s) { return x * s; }", "", {{"s", 0.1}});
  for (DType dtype : {DType::kFloat16, DType::kBFloat16}) {
    SCOPED_TRACE(cudascope::dtype_name(dtype));
    const Tensor x = counting({8}, dtype, 1);
    const Tensor out = fn({x});
    EXPECT_EQ(out.dtype(), dtype);
    // Each result rounded once, from float: what a full() of the float product stores.
    for (int i = 0; i < 8; ++i) {
      const float product = static_cast<float>(i + 1) * 0.1f;
      EXPECT_EQ(out.to_vector()[static_cast<std::size_t>(i)],
                cudascope::full({1}, product, on_cuda(dtype)).to_vector()[0]) << i;
    }
  }
}

TEST(JiteratorTest, MultiOutputFunctionWritesEveryOutput) {
  const auto fn = jit::create_multi_output_jit_fn(
      "template <typename T> void sum_diff(T x, T y, T scale, T& sum, T& diff) { sum = (x + y) * scale; diff = x - y; }",
      "", 2, {{"scale", 1.0}});
  EXPECT_EQ(fn.num_outputs(), 2);
  const Tensor x = counting({2, 3});
  const Tensor y = counting({3}, DType::kFloat32, 10);
  const std::vector<Tensor> out = fn({x, y}, {{"scale", 2.0}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].to_vector(), host_map({x, y}, {2, 3}, [](const std::vector<double>& v) { return (v[0] + v[1]) * 2; }));
  EXPECT_EQ(out[1].to_vector(), host_map({x, y}, {2, 3}, [](const std::vector<double>& v) { return v[0] - v[1]; }));
  EXPECT_NE(out[0].data_ptr(), out[1].data_ptr());
}

TEST(JiteratorTest, SecondCallOfAVariantDoesNotRecompile) {
  const std::string code = fresh("template <typename T> T cached_twice(T x) { return x + 2; }");
  const auto fn = jit::create_jit_fn(code);
  const std::int64_t before = jit::compiled_kernel_count();
  EXPECT_EQ(fn({counting({4})}).to_vector(), (std::vector<double>{2, 3, 4, 5}));
  EXPECT_EQ(jit::compiled_kernel_count(), before + 1);
  EXPECT_EQ(fn({counting({4}, DType::kFloat32, 1)}).to_vector(), (std::vector<double>{3, 4, 5, 6}));
  // A second function of the same code shares the compiled kernel, as torch's cache does.
  EXPECT_EQ(jit::create_jit_fn(code)({counting({9})}).numel(), 9);
  EXPECT_EQ(jit::compiled_kernel_count(), before + 1);
  // Another dtype is another variant; so is a strided layout.
  fn({counting({4}, DType::kInt32)});
  EXPECT_EQ(jit::compiled_kernel_count(), before + 2);
  fn({counting({4, 4}).narrow(1, 0, 2)});
  EXPECT_EQ(jit::compiled_kernel_count(), before + 3);
}

TEST(JiteratorTest, ConcurrentFirstCallsCompileOnce) {
  const auto fn = jit::create_jit_fn(fresh("template <typename T> T raced(T x) { return x * 3; }"));
  const std::int64_t before = jit::compiled_kernel_count();
  std::vector<std::thread> threads;
  std::vector<std::vector<double>> results(4);
  for (std::size_t t = 0; t < results.size(); ++t) {
    threads.emplace_back([&, t] { results[t] = fn({counting({5})}).to_vector(); });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(jit::compiled_kernel_count(), before + 1);
  for (const auto& result : results) EXPECT_EQ(result, (std::vector<double>{0, 3, 6, 9, 12}));
}

TEST(JiteratorTest, CompileErrorsCarryTheCompilersMessage) {
  const auto fn = jit::create_jit_fn("template <typename T> T broken(T x) { return x + no_such_name; }");
  const cuda::Error e = error_of([&] { fn({counting({3})}); });
  EXPECT_EQ(e.code(), cuda::error_code::kInvalidValue);
  EXPECT_THAT(e.what(), HasSubstr("no_such_name"));
  EXPECT_THAT(e.what(), HasSubstr("broken"));
  // Nothing was cached: the next call compiles (and fails) again rather than reusing a failure.
  EXPECT_THROW(fn({counting({3})}), cuda::Error);
}

TEST(JiteratorTest, EntryIsTheLastTemplateFunctionUnlessNamed) {
  const std::string code =
      "template <typename T> T helper(T x) { return x * 3; }\n"
      "template <typename T>\nT entry(T x) { return helper(x) + 1; }";
  EXPECT_EQ(jit::create_jit_fn(code).name(), "entry");
  EXPECT_EQ(jit::create_jit_fn(code)({counting({3})}).to_vector(), (std::vector<double>{1, 4, 7}));
  EXPECT_EQ(jit::create_jit_fn(code, "helper")({counting({3})}).to_vector(), (std::vector<double>{0, 3, 6}));
  EXPECT_EQ(cuda::detail::entry_function_name("template <typename T> unsigned int f2 (T x) { return x; }"), "f2");
}

TEST(JiteratorTest, RefusesBadArgumentsNamingThem) {
  EXPECT_THAT(error_of([] { jit::create_jit_fn("int f(int x) { return x; }"); }).what(),
              HasSubstr("no template function found"));
  EXPECT_THAT(error_of([] { jit::create_jit_fn(kAxpy, "not a name"); }).what(), HasSubstr("'not a name'"));
  EXPECT_THAT(error_of([] { jit::create_multi_output_jit_fn(kAxpy, "", 9); }).what(), HasSubstr("not 9"));
  EXPECT_THAT(error_of([] { jit::create_jit_fn(kAxpy, "", {{"alpha", 1}, {"alpha", 2}}); }).what(),
              HasSubstr("'alpha'"));
  const auto fn = jit::create_jit_fn(kAxpy, "", {{"alpha", 1.0}});
  const cuda::Error unknown = error_of([&] { fn({counting({2}), counting({2})}, {{"beta", 2.0}}); });
  EXPECT_EQ(unknown.code(), cuda::error_code::kInvalidValue);
  EXPECT_THAT(unknown.what(), HasSubstr("'beta' is not a scalar argument of my_kernel (declared: alpha)"));
  EXPECT_THAT(error_of([&] { fn({}); }).what(), HasSubstr("1 to 8 input tensors, not 0"));
  const Tensor host = cudascope::ones({2});
  EXPECT_THAT(error_of([&] { fn({counting({2}), host}); }).what(), HasSubstr("input 1 must be a CUDA tensor"));
}

TEST(JiteratorTest, RefusesInputsOnDifferentDevices) {
  CUDASCOPE_REQUIRE_DEVICES(2);
  const auto fn = jit::create_jit_fn(kAxpy, "", {{"alpha", 1.0}});
  const Tensor a = cudascope::ones({3}, on_cuda(DType::kFloat32, 0));
  const Tensor b = cudascope::ones({3}, on_cuda(DType::kFloat32, 1));
  const cuda::Error e = error_of([&] { fn({a, b}); });
  EXPECT_EQ(e.code(), cuda::error_code::kInvalidValue);
  EXPECT_THAT(e.what(), HasSubstr("input 1 is on cuda:1 and input 0 on cuda:0"));
  // Both on device 1: the outputs are there too.
  EXPECT_EQ(fn({b, b}).device(), Device::cuda(1));
  EXPECT_EQ(fn({b, b}).to_vector(), std::vector<double>(3, 0));
}

TEST(JiteratorTest, EmptyInputsGiveEmptyOutputsWithoutALaunch) {
  const auto fn = jit::create_jit_fn("template <typename T> T never_compiled(T x) { return x; }");
  const std::int64_t before = jit::compiled_kernel_count();
  const Tensor out = fn({cudascope::empty({0, 3}, on_cuda())});
  EXPECT_EQ(out.sizes(), (std::vector<std::int64_t>{0, 3}));
  EXPECT_EQ(jit::compiled_kernel_count(), before);
}

TEST(JiteratorTest, RunsOnTheCurrentStreamAndIsReportedAsAKernel) {
  if (cudascope::testing::on_cuda_backend()) GTEST_SKIP() << "on cuda, CUPTI reports the kernels";
  const auto fn = jit::create_jit_fn("template <typename T> T observed(T x) { return x * 2; }");
  const Tensor x = counting({64});
  cuda::Stream side;
  side.wait_stream(cuda::current_stream(0));
  KernelRecorder recorder;
  cuda::instrumentation::set_observer(&recorder);
  Tensor out;
  {
    cuda::StreamGuard guard(side);
    out = fn({x});
    x.record_stream(side);
  }
  side.synchronize();
  cuda::instrumentation::set_observer(nullptr);
  EXPECT_THAT(recorder.kernels, ::testing::Contains(std::pair<std::string, std::int64_t>(
                                    "observed_contiguous_kernel", side.id())));
  EXPECT_EQ(out.to_vector()[63], 126);
}

TEST(JiteratorTest, SimWithoutAHostCompilerIsAClearError) {
  if (cudascope::testing::on_cuda_backend()) GTEST_SKIP() << "the cuda backend compiles with NVRTC";
  const char* saved = std::getenv("CXX");
  const std::string previous = saved != nullptr ? saved : "";
  setenv("CXX", "/nonexistent/bin/c++", 1);
  const auto fn = jit::create_jit_fn("template <typename T> T no_compiler(T x) { return x; }");
  const cuda::Error e = error_of([&] { fn({counting({2})}); });
  saved != nullptr ? setenv("CXX", previous.c_str(), 1) : unsetenv("CXX");
  EXPECT_EQ(e.code(), cuda::error_code::kNotSupported);
  EXPECT_THAT(e.what(), HasSubstr("CXX=/nonexistent/bin/c++"));
}

TEST(JiteratorNvrtcTest, MissingNvrtcIsAClearError) {
  const cuda::Error e = error_of([] { cuda::detail::tools::open_nvrtc({"libcudascope-no-such-nvrtc.so.99"}); });
  EXPECT_EQ(e.code(), cuda::error_code::kNotSupported);
  EXPECT_THAT(e.what(), HasSubstr("libcudascope-no-such-nvrtc.so.99"));
  EXPECT_THAT(e.what(), HasSubstr("NVRTC is not available"));
}

// The generated device code compiles wherever NVRTC is installed, GPU or not: every variant
// the cuda backend builds (flat vectorised, strided, multi-output, half precision).
TEST(JiteratorNvrtcTest, GeneratedDeviceKernelsCompileWithNvrtc) {
  try {
    cuda::detail::tools::open_nvrtc(cuda::detail::tools::nvrtc_candidates());
  } catch (const cuda::Error& e) {
    GTEST_SKIP() << "NVRTC is not installed: " << e.what();
  }
  cuda::detail::JitProgram program;
  program.code = "template <typename T> void pair(T x, T y, T a, T& s, T& d) { s = a * x + y; d = x * x - y; }";
  program.name = "pair";
  program.num_outputs = 2;
  program.return_by_ref = true;
  program.scalars = {{"a", 1.0}};
  cuda::detail::JitKernel kernel;
  kernel.program = &program;
  for (DType output : {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kInt64, DType::kBool}) {
    kernel.inputs = {output, output == DType::kFloat32 ? DType::kInt32 : output};
    kernel.output = output;
    for (bool contiguous : {true, false}) {
      kernel.contiguous = contiguous;
      SCOPED_TRACE(std::string(cudascope::dtype_name(output)) + (contiguous ? " flat" : " strided"));
      const std::string name = cuda::detail::jit_kernel_name(kernel, contiguous ? 4 : 1);
      const auto image = cuda::detail::nvrtc_compile(cuda::detail::device_jit_source(kernel, 4, name), "pair.cu", 90);
      EXPECT_TRUE(image.cubin);
      EXPECT_EQ(image.target, "sm_90");
      EXPECT_GT(image.bytes.size(), 1000u);
    }
  }
  // Math functions of the compute type (float for half precision) resolve without headers.
  cuda::detail::JitProgram math = program;
  math.code = "template <typename T> void pair(T x, T y, T a, T& s, T& d) { s = exp(x) * a; d = sqrt(y) + sinf(x); }";
  cuda::detail::JitKernel math_kernel = kernel;
  math_kernel.program = &math;
  for (DType dtype : {DType::kFloat32, DType::kFloat16}) {
    math_kernel.inputs = {dtype, dtype};
    math_kernel.output = dtype;
    EXPECT_TRUE(cuda::detail::nvrtc_compile(cuda::detail::device_jit_source(math_kernel, 2, "pair_kernel"), "m.cu", 80).cubin);
  }
  // An architecture newer than NVRTC knows: PTX for the newest it knows.
  const auto ptx = cuda::detail::nvrtc_compile(cuda::detail::device_jit_source(kernel, 1, "pair_kernel"), "pair.cu", 999);
  EXPECT_FALSE(ptx.cubin);
  EXPECT_THAT(ptx.target, HasSubstr("compute_"));
  EXPECT_THAT(ptx.bytes, HasSubstr(".entry pair_kernel"));
}

TEST(JiteratorNvrtcTest, DeviceCompileErrorsCarryNvrtcsLog) {
  try {
    cuda::detail::tools::open_nvrtc(cuda::detail::tools::nvrtc_candidates());
  } catch (const cuda::Error& e) {
    GTEST_SKIP() << "NVRTC is not installed: " << e.what();
  }
  cuda::detail::JitProgram program;
  program.code = "template <typename T> T bad(T x) { return x + undefined_thing; }";
  program.name = "bad";
  cuda::detail::JitKernel kernel;
  kernel.program = &program;
  kernel.inputs = {DType::kFloat32};
  const cuda::Error e =
      error_of([&] { cuda::detail::nvrtc_compile(cuda::detail::device_jit_source(kernel, 1, "bad_kernel"), "bad.cu", 90); });
  EXPECT_EQ(e.code(), cuda::error_code::kInvalidValue);
  EXPECT_THAT(e.what(), HasSubstr("undefined_thing"));
}
