// Runs cudascope's jiterator over fixed cases and prints JSON for jiterator_check.py, which
// runs torch.cuda.jiterator on the same code strings, inputs and scalars and compares.
//   jiterator_dump [--time]      (CUDASCOPE_BACKEND=cuda on the GPU; sim works too)
// Each case: the code string, entry kind, scalars (creation defaults and call overrides),
// inputs (dtype, base sizes, row-major base values, an optional narrow) and our outputs.
// --time adds microseconds per call for a few large cases, timed with CUDA events.
#include <cudascope/cuda.h>
#include <cudascope/util/json_escape.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace cuda = cudascope::cuda;
namespace jit = cudascope::cuda::jiterator;
using cudascope::DType;
using cudascope::Tensor;

namespace {

struct Narrow {
  int dim = -1;  // -1: none
  std::int64_t start = 0, length = 0;
};

struct InputSpec {
  DType dtype;
  std::vector<std::int64_t> sizes;
  Narrow narrow;
  int seed = 0;
};

struct Case {
  std::string name, code;
  int num_outputs = 0;  // 0: create_jit_fn, else create_multi_output_jit_fn
  std::vector<jit::ScalarArg> defaults, overrides;
  std::vector<InputSpec> inputs;
};

std::int64_t numel(const std::vector<std::int64_t>& sizes) {
  std::int64_t n = 1;
  for (std::int64_t s : sizes) n *= s;
  return n;
}

// Values exactly representable in every dtype they are used with (float16 and bfloat16 too).
double pattern(DType dtype, std::int64_t i, int seed) {
  const std::int64_t r = (i * (37 + 2 * seed) + seed) % 97;
  if (dtype == DType::kBool) return r % 3 == 0;
  if (dtype == DType::kUInt8) return static_cast<double>(r);
  if (!cudascope::is_floating_point(dtype)) return static_cast<double>(r - 48);
  return static_cast<double>(r) / 8.0 - 6.0;
}

std::uint32_t float_bits(float f) {
  std::uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

// Exact conversions only (pattern() values): no rounding needed.
std::uint16_t exact_half(float f) {
  const std::uint32_t bits = float_bits(f);
  if ((bits & 0x7fffffffu) == 0) return static_cast<std::uint16_t>(bits >> 16);
  const auto exponent = static_cast<std::uint32_t>(static_cast<int>((bits >> 23) & 0xff) - 127 + 15);
  return static_cast<std::uint16_t>(((bits >> 16) & 0x8000u) | (exponent << 10) | ((bits >> 13) & 0x3ffu));
}

void store(DType dtype, void* base, std::int64_t i, double v) {
  switch (dtype) {
    case DType::kFloat32: static_cast<float*>(base)[i] = static_cast<float>(v); break;
    case DType::kFloat16: static_cast<std::uint16_t*>(base)[i] = exact_half(static_cast<float>(v)); break;
    case DType::kBFloat16: static_cast<std::uint16_t*>(base)[i] = static_cast<std::uint16_t>(float_bits(static_cast<float>(v)) >> 16); break;
    case DType::kInt64: static_cast<std::int64_t*>(base)[i] = static_cast<std::int64_t>(v); break;
    case DType::kInt32: static_cast<std::int32_t*>(base)[i] = static_cast<std::int32_t>(v); break;
    case DType::kUInt8: static_cast<std::uint8_t*>(base)[i] = static_cast<std::uint8_t>(v); break;
    case DType::kBool: static_cast<bool*>(base)[i] = v != 0; break;
  }
}

Tensor make_input(const InputSpec& spec, std::vector<double>& values) {
  Tensor host = cudascope::empty(spec.sizes, cudascope::TensorOptions{}.with_dtype(spec.dtype));
  for (std::int64_t i = 0; i < numel(spec.sizes); ++i) {
    values.push_back(pattern(spec.dtype, i, spec.seed));
    store(spec.dtype, host.data_ptr(), i, values.back());
  }
  Tensor device = host.cuda();
  return spec.narrow.dim < 0 ? device : device.narrow(spec.narrow.dim, spec.narrow.start, spec.narrow.length);
}

std::vector<Tensor> run(const Case& c, const std::vector<Tensor>& inputs) {
  if (c.num_outputs == 0) return {jit::create_jit_fn(c.code, "", c.defaults)(inputs, c.overrides)};
  return jit::create_multi_output_jit_fn(c.code, "", c.num_outputs, c.defaults)(inputs, c.overrides);
}

std::string numbers(const std::vector<double>& values) {
  std::string text = "[";
  char buffer[32];
  for (std::size_t i = 0; i < values.size(); ++i) {
    std::snprintf(buffer, sizeof buffer, "%s%.17g", i ? "," : "", values[i]);
    text += buffer;
  }
  return text + "]";
}

std::string sizes_json(const std::vector<std::int64_t>& sizes) {
  std::vector<double> values(sizes.begin(), sizes.end());
  return numbers(values);
}

std::string scalars_json(const std::vector<jit::ScalarArg>& scalars) {
  std::string text = "[";
  for (std::size_t i = 0; i < scalars.size(); ++i) {
    text += i ? "," : "";
    text += "[";
    cudascope::util::append_json_string(text, scalars[i].name);
    text += "," + numbers({scalars[i].value}).substr(1);
  }
  return text + "]";
}

// The case's code, scalars and inputs; the inputs' values too when `values` (then `inputs`
// receives the tensors).
std::string spec_json(const Case& c, bool values, std::vector<Tensor>& inputs) {
  std::string text = "{\"name\":";
  cudascope::util::append_json_string(text, c.name);
  text += ",\"code\":";
  cudascope::util::append_json_string(text, c.code);
  text += ",\"num_outputs\":" + std::to_string(c.num_outputs) + ",\"defaults\":" + scalars_json(c.defaults) +
          ",\"overrides\":" + scalars_json(c.overrides) + ",\"inputs\":[";
  for (std::size_t i = 0; i < c.inputs.size(); ++i) {
    const InputSpec& spec = c.inputs[i];
    text += std::string(i ? "," : "") + "{\"dtype\":\"" + cudascope::dtype_name(spec.dtype) + "\",\"sizes\":" +
            sizes_json(spec.sizes) + ",\"narrow\":" +
            (spec.narrow.dim < 0 ? std::string("null")
                                 : sizes_json({spec.narrow.dim, spec.narrow.start, spec.narrow.length}));
    if (values) {
      std::vector<double> base;
      inputs.push_back(make_input(spec, base));
      text += ",\"values\":" + numbers(base);
    }
    text += "}";
  }
  return text + "]";
}

std::string case_json(const Case& c) {
  std::vector<Tensor> inputs;
  std::string text = spec_json(c, true, inputs) + ",\"outputs\":[";
  const std::vector<Tensor> outputs = run(c, inputs);
  for (std::size_t o = 0; o < outputs.size(); ++o) {
    text += std::string(o ? "," : "") + "{\"dtype\":\"" + cudascope::dtype_name(outputs[o].dtype()) + "\",\"sizes\":" +
            sizes_json(outputs[o].sizes()) + ",\"values\":" + numbers(outputs[o].to_vector()) + "}";
  }
  return text + "]}";
}

const char* kAxpy = "template <typename T> T my_kernel(T x, T y, T alpha) { return -x + alpha * y; }";

std::vector<Case> cases() {
  const DType f32 = DType::kFloat32;
  return {
      {"axpy", kAxpy, 0, {{"alpha", 1.0}}, {{"alpha", 3.14}}, {{f32, {3, 4}}, {f32, {3, 4}, {}, 5}}},
      {"unary_exp", "template <typename T> T soft(T x) { return x / (T(1) + exp(-x)); }", 0, {}, {}, {{f32, {1000}}}},
      {"ternary", "template <typename T> T fma3(T x, T y, T z, T alpha, T beta) { return alpha * x * y + beta * z; }", 0,
       {{"alpha", 2.0}, {"beta", -1.0}}, {{"beta", 0.5}}, {{f32, {5}}, {f32, {5}, {}, 1}, {f32, {5}, {}, 2}}},
      {"broadcast", "template <typename T> T mul(T x, T y) { return x * 10 + y; }", 0, {}, {}, {{f32, {4, 1}}, {f32, {1, 5}, {}, 3}}},
      {"strided", "template <typename T> T sub(T x, T y) { return x - 2 * y; }", 0, {}, {},
       {{f32, {4, 6}, {1, 1, 3}}, {f32, {4, 8}, {1, 2, 3}, 9}}},
      {"int32", "template <typename T> T mix(T x, T y, T k) { return x * k + y / 3 + x % 5; }", 0, {{"k", 7}}, {},
       {{DType::kInt32, {12}}, {DType::kInt32, {12}, {}, 4}}},
      {"int64", "template <typename T> T mix(T x, T y, T k) { return x * k + y / 3 + x % 5; }", 0, {{"k", 7}}, {{"k", -3}},
       {{DType::kInt64, {3, 4}}, {DType::kInt64, {4}, {}, 4}}},
      {"uint8", "template <typename T> T mix(T x, T y, T k) { return x * k + y / 3 + x % 5; }", 0, {{"k", 7}}, {},
       {{DType::kUInt8, {12}}, {DType::kUInt8, {12}, {}, 4}}},
      {"bool", "template <typename T> T either(T x, T y) { return x || y; }", 0, {}, {},
       {{DType::kBool, {10}}, {DType::kBool, {10}, {}, 1}}},
      {"promote_int_float", "template <typename T> T half_sum(T x, T y) { return (x + y) / 2; }", 0, {}, {},
       {{DType::kInt32, {6}}, {f32, {6}, {}, 1}}},
      {"promote_int_long", "template <typename T> T half_sum(T x, T y) { return (x + y) / 2; }", 0, {}, {},
       {{DType::kInt32, {6}}, {DType::kInt64, {6}, {}, 1}}},
      {"float16", "template <typename T> T scale(T x, T s) { return x * s; }", 0, {{"s", 0.1}}, {},
       {{DType::kFloat16, {2, 64}}}},
      {"bfloat16", "template <typename T> T scale(T x, T s) { return x * s; }", 0, {{"s", 0.1}}, {},
       {{DType::kBFloat16, {2, 64}}}},
      {"float16_misaligned", "template <typename T> T scale(T x, T s) { return x * s; }", 0, {{"s", 0.1}}, {},
       {{DType::kFloat16, {1, 1031}, {1, 1, 1029}}}},
      {"multi_output",
       "template <typename T> void sum_diff(T x, T y, T scale, T& sum, T& diff) { sum = (x + y) * scale; diff = x - y; }",
       2, {{"scale", 1.0}}, {{"scale", 2.0}}, {{f32, {2, 3}}, {f32, {3}, {}, 10}}},
      {"large_flat", kAxpy, 0, {{"alpha", 1.0}}, {}, {{f32, {1 << 20}}, {f32, {1 << 20}, {}, 5}}},
  };
}

// Microseconds per call of `c` (outputs allocated each call, as torch's).
double time_case(const Case& c, int calls) {
  std::vector<Tensor> inputs;
  for (const InputSpec& spec : c.inputs) {
    std::vector<double> values;
    inputs.push_back(make_input(spec, values));
  }
  for (int i = 0; i < 3; ++i) run(c, inputs);
  cuda::Event start(true), end(true);
  start.record();
  for (int i = 0; i < calls; ++i) run(c, inputs);
  end.record();
  end.synchronize();
  return static_cast<double>(start.elapsed_time(end)) * 1000.0 / calls;
}

std::vector<Case> timing_cases() {
  const std::int64_t n = 1 << 24;
  return {
      {"time_flat_f32_16M", kAxpy, 0, {{"alpha", 1.0}}, {}, {{DType::kFloat32, {n}}, {DType::kFloat32, {n}, {}, 5}}},
      {"time_strided_f32_16M", kAxpy, 0, {{"alpha", 1.0}}, {},
       {{DType::kFloat32, {4096, 8192}, {1, 0, 4096}}, {DType::kFloat32, {4096, 1}, {}, 5}}},
      {"time_flat_f16_16M", kAxpy, 0, {{"alpha", 1.0}}, {}, {{DType::kFloat16, {n}}, {DType::kFloat16, {n}, {}, 5}}},
  };
}

}  // namespace

int main(int argc, char** argv) {
  const bool timing = argc > 1 && std::strcmp(argv[1], "--time") == 0;
  if (argc > 1 && !timing) {
    std::printf("usage: jiterator_dump [--time]\n  prints cudascope's jiterator results as JSON for "
                "bench/jiterator/jiterator_check.py\n");
    return std::strcmp(argv[1], "--help") == 0 ? 0 : 2;
  }
  std::string out = "{\"backend\":\"" + cuda::backend_name() + "\",\"cases\":[";
  const std::vector<Case> all = cases();
  for (std::size_t i = 0; i < all.size(); ++i) out += (i ? ",\n" : "\n") + case_json(all[i]);
  out += "],\"timings\":[";
  if (timing) {
    const std::vector<Case> timed = timing_cases();
    for (std::size_t i = 0; i < timed.size(); ++i) {
      std::vector<Tensor> unused;
      char buffer[64];
      std::snprintf(buffer, sizeof buffer, ",\"us_per_call\":%.3f}", time_case(timed[i], 50));
      out += (i ? ",\n" : "\n") + spec_json(timed[i], false, unused) + buffer;
    }
  }
  out += "]}\n";
  std::fputs(out.c_str(), stdout);
  return 0;
}
