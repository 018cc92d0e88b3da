#include "jit_source.h"

#include <regex>

namespace cudascope::cuda::detail {
namespace {

// Shared by host and device code. No headers on the device (NVRTC may have none): float16
// converts through PTX, bfloat16 with the same bit arithmetic as the runtime's host copy
// (tensor/scalar_convert.h), whose float16 half the host code below repeats.
constexpr const char* kPrelude = R"(
#ifdef __CUDACC_RTC__
#define CS_FN __device__ __forceinline__
#else
#include <math.h>
#include <stdint.h>
#define CS_FN inline
#endif

struct CsHalf { unsigned short bits; };
struct CsBFloat16 { unsigned short bits; };

struct CsJitArgs {
  void* data[16];
  long long numel;
  int ndim;
  int unused;
  long long sizes[8];
  long long strides[16][8];
  double scalars[16];
};
static_assert(sizeof(CsJitArgs) == 1360, "CsJitArgs must match the runtime's JitArgs");

CS_FN float cs_bits_to_float(unsigned int bits) {
#ifdef __CUDACC_RTC__
  return __uint_as_float(bits);
#else
  float f;
  __builtin_memcpy(&f, &bits, sizeof f);
  return f;
#endif
}
CS_FN unsigned int cs_float_to_bits(float f) {
#ifdef __CUDACC_RTC__
  return __float_as_uint(f);
#else
  unsigned int bits;
  __builtin_memcpy(&bits, &f, sizeof bits);
  return bits;
#endif
}

CS_FN float cs_half_to_float(unsigned short h) {
#ifdef __CUDACC_RTC__
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
#else
  const unsigned int sign = (unsigned int)(h & 0x8000u) << 16;
  unsigned int exponent = (h >> 10) & 0x1fu;
  unsigned int mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return cs_bits_to_float(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    if (mantissa == 0) return cs_bits_to_float(sign);
    int shift = 0;
    while ((mantissa & 0x400u) == 0) { mantissa <<= 1; ++shift; }
    mantissa &= 0x3ffu;
    exponent = (unsigned int)(1 - shift);
  }
  return cs_bits_to_float(sign | ((exponent + 112) << 23) | (mantissa << 13));
#endif
}

CS_FN unsigned short cs_float_to_half(float f) {
#ifdef __CUDACC_RTC__
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
#else
  const unsigned int bits = cs_float_to_bits(f);
  const unsigned short sign = (unsigned short)((bits >> 16) & 0x8000u);
  const unsigned int abs = bits & 0x7fffffffu;
  if (abs > 0x7f800000u) return (unsigned short)(sign | 0x7e00u);
  if (abs >= 0x477ff000u) return (unsigned short)(sign | 0x7c00u);
  if (abs < 0x38800000u) {
    const float scaled = cs_bits_to_float(abs) * 16777216.0f;
    unsigned int units = (unsigned int)scaled;
    const float rest = scaled - (float)units;
    if (rest > 0.5f || (rest == 0.5f && (units & 1u) != 0)) ++units;
    return (unsigned short)(sign | units);
  }
  const unsigned int rounded = abs + 0xfffu + ((abs >> 13) & 1u);
  return (unsigned short)(sign | ((rounded - 0x38000000u) >> 13));
#endif
}

CS_FN unsigned short cs_float_to_bfloat16(float f) {
  unsigned int bits = cs_float_to_bits(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((bits >> 16) | 0x40);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return (unsigned short)(bits >> 16);
}

// Loads: storage type -> a value the compute type converts from.
template <typename S> CS_FN S cs_widen(S v) { return v; }
CS_FN float cs_widen(CsHalf v) { return cs_half_to_float(v.bits); }
CS_FN float cs_widen(CsBFloat16 v) { return cs_bits_to_float((unsigned int)v.bits << 16); }

// Stores: compute type -> storage type.
template <typename S> struct CsNarrow {
  template <typename C> static CS_FN S from(C v) { return static_cast<S>(v); }
};
template <> struct CsNarrow<CsHalf> {
  template <typename C> static CS_FN CsHalf from(C v) { CsHalf h; h.bits = cs_float_to_half((float)v); return h; }
};
template <> struct CsNarrow<CsBFloat16> {
  template <typename C> static CS_FN CsBFloat16 from(C v) { CsBFloat16 h; h.bits = cs_float_to_bfloat16((float)v); return h; }
};
)";

const char* storage_type(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return "float";
    case DType::kFloat16: return "CsHalf";
    case DType::kBFloat16: return "CsBFloat16";
    case DType::kInt64: return "long long";
    case DType::kInt32: return "int";
    case DType::kUInt8: return "unsigned char";
    case DType::kBool: return "bool";
  }
  return "?";
}

// torch's compute type: float16 and bfloat16 compute in float.
const char* compute_type(DType dtype) {
  return dtype == DType::kFloat16 || dtype == DType::kBFloat16 ? "float" : storage_type(dtype);
}

std::string list(int count, const std::string& prefix, const std::string& suffix = {}) {
  std::string text;
  for (int i = 0; i < count; ++i) text += (i ? ", " : "") + prefix + std::to_string(i) + suffix;
  return text;
}

// cs_apply(scalars, x0.., o0..): the entry function called as torch calls it.
std::string apply_function(const JitKernel& k) {
  const JitProgram& p = *k.program;
  const std::string c = compute_type(k.output);
  std::string params = "const double* s";
  for (int i = 0; i < k.num_inputs(); ++i) params += ", " + c + " x" + std::to_string(i);
  for (int o = 0; o < p.num_outputs; ++o) params += ", " + c + "& o" + std::to_string(o);
  std::string args = list(k.num_inputs(), "x");
  for (std::size_t i = 0; i < p.scalars.size(); ++i) args += ", s[" + std::to_string(i) + "]";
  const std::string call = p.name + "<" + c + ">(" + args;
  const std::string body = p.return_by_ref ? call + ", " + list(p.num_outputs, "o") + ");" : "o0 = " + call + ");";
  return "CS_FN void cs_apply(" + params + ") { " + body + " }\n";
}

std::string load(const JitKernel& k, int input, const std::string& index) {
  const std::string operand = std::to_string(k.program->num_outputs + input);
  return std::string("static_cast<") + compute_type(k.output) + ">(cs_widen(static_cast<const " +
         storage_type(k.inputs[static_cast<std::size_t>(input)]) + "*>(a.data[" + operand + "])[" + index + "]))";
}

// cs_element(a, off): one element at per-operand offsets (outputs first).
std::string element_function(const JitKernel& k) {
  const int outputs = k.program->num_outputs;
  const std::string out_type = storage_type(k.output);
  std::string text = "CS_FN void cs_element(const CsJitArgs& a, const long long* off) {\n";
  for (int o = 0; o < outputs; ++o) text += std::string("  ") + compute_type(k.output) + " o" + std::to_string(o) + "{};\n";
  text += "  cs_apply(a.scalars";
  for (int i = 0; i < k.num_inputs(); ++i) text += ",\n    " + load(k, i, "off[" + std::to_string(outputs + i) + "]");
  text += ", " + list(outputs, "o") + ");\n";
  for (int o = 0; o < outputs; ++o) {
    const std::string n = std::to_string(o);
    text += "  static_cast<" + out_type + "*>(a.data[" + n + "])[off[" + n + "]] = CsNarrow<" + out_type + ">::from(o" + n + ");\n";
  }
  return text + "}\n";
}

// cs_offsets(a, i, off): each operand's element offset for the i-th element in row-major
// order, for index type I: unsigned 32-bit where the tensor has fewer than 2^31 elements
// (a GPU divides 32-bit integers in a few instructions and emulates 64-bit division), else
// 64-bit.
std::string offsets_function(int operands) {
  const std::string n = std::to_string(operands);
  return "template <typename I>\n"
         "CS_FN void cs_offsets(const CsJitArgs& a, I i, long long* off) {\n"
         "  for (int k = 0; k < " + n + "; ++k) off[k] = 0;\n"
         "  for (int d = a.ndim - 1; d >= 0; --d) {\n"
         "    const I size = static_cast<I>(a.sizes[d]);\n"
         "    const I c = i % size;\n"
         "    i /= size;\n"
         "    for (int k = 0; k < " + n + "; ++k) off[k] += static_cast<long long>(c) * a.strides[k][d];\n"
         "  }\n}\n";
}

std::string common_part(const JitKernel& k) {
  return std::string(kPrelude) + "\n#line 1 \"jiterator code\"\n" + k.program->code + "\n#line 1 \"jiterator wrapper\"\n" +
         apply_function(k) + element_function(k) + offsets_function(k.num_operands());
}

std::string host_shell(const JitKernel& k, const std::string& kernel_name) {
  const std::string n = std::to_string(k.num_operands());
  std::string text = "extern \"C\" void " + kernel_name + "(const CsJitArgs* args) {\n"
                     "  const CsJitArgs& a = *args;\n"
                     "  long long off[" + n + "] = {};\n";
  if (k.contiguous) {
    return text + "  for (long long i = 0; i < a.numel; ++i) {\n"
                  "    for (int k = 0; k < " + n + "; ++k) off[k] = i;\n"
                  "    cs_element(a, off);\n  }\n}\n";
  }
  // An odometer over the dimensions: no division per element.
  return text + "  long long index[8] = {};\n"
                "  for (long long i = 0; i < a.numel; ++i) {\n"
                "    cs_element(a, off);\n"
                "    for (int d = a.ndim - 1; d >= 0; --d) {\n"
                "      for (int k = 0; k < " + n + "; ++k) off[k] += a.strides[k][d];\n"
                "      if (++index[d] < a.sizes[d]) break;\n"
                "      for (int k = 0; k < " + n + "; ++k) off[k] -= a.strides[k][d] * a.sizes[d];\n"
                "      index[d] = 0;\n"
                "    }\n  }\n}\n";
}

std::string device_strided_shell(const JitKernel& k, const std::string& kernel_name) {
  const std::string n = std::to_string(k.num_operands());
  // Below 2^31 elements the index arithmetic is 32-bit: i + step stays below 2^32 (the grid
  // holds at most 2^27 threads), so the unsigned loop cannot wrap.
  return "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kJitBlockThreads) + ") " + kernel_name +
         "(const CsJitArgs a) {\n"
         "  long long off[" + n + "];\n"
         "  if (a.numel < 0x80000000LL) {\n"
         "    const unsigned int numel = static_cast<unsigned int>(a.numel), step = gridDim.x * blockDim.x;\n"
         "    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < numel; i += step) {\n"
         "      cs_offsets<unsigned int>(a, i, off);\n"
         "      cs_element(a, off);\n    }\n    return;\n  }\n"
         "  const long long step = (long long)gridDim.x * blockDim.x;\n"
         "  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < a.numel; i += step) {\n"
         "    cs_offsets<long long>(a, i, off);\n"
         "    cs_element(a, off);\n  }\n}\n";
}

// The flat kernel: aligned vectors of V elements per operand (the caller checked the
// alignment), the tail one element at a time.
std::string device_vector_body(const JitKernel& k) {
  const int outputs = k.program->num_outputs;
  const std::string out_type = storage_type(k.output);
  std::string text;
  for (int i = 0; i < k.num_inputs(); ++i) {
    const std::string s = storage_type(k.inputs[static_cast<std::size_t>(i)]);
    const std::string op = std::to_string(outputs + i);
    text += "      const CsVec<" + s + "> v" + std::to_string(i) + " = *reinterpret_cast<const CsVec<" + s +
            ">*>(static_cast<const " + s + "*>(a.data[" + op + "]) + base);\n";
  }
  for (int o = 0; o < outputs; ++o) text += "      CsVec<" + out_type + "> r" + std::to_string(o) + ";\n";
  text += "#pragma unroll\n      for (int j = 0; j < CS_VEC; ++j) {\n";
  for (int o = 0; o < outputs; ++o) text += std::string("        ") + compute_type(k.output) + " o" + std::to_string(o) + "{};\n";
  text += "        cs_apply(a.scalars";
  for (int i = 0; i < k.num_inputs(); ++i) {
    text += std::string(", static_cast<") + compute_type(k.output) + ">(cs_widen(v" + std::to_string(i) + ".v[j]))";
  }
  text += ", " + list(outputs, "o") + ");\n";
  for (int o = 0; o < outputs; ++o) {
    text += "        r" + std::to_string(o) + ".v[j] = CsNarrow<" + out_type + ">::from(o" + std::to_string(o) + ");\n";
  }
  text += "      }\n";
  for (int o = 0; o < outputs; ++o) {
    text += "      *reinterpret_cast<CsVec<" + out_type + ">*>(static_cast<" + out_type + "*>(a.data[" +
            std::to_string(o) + "]) + base) = r" + std::to_string(o) + ";\n";
  }
  return text;
}

std::string device_flat_shell(const JitKernel& k, int vector_width, const std::string& kernel_name) {
  const std::string n = std::to_string(k.num_operands());
  return "#define CS_VEC " + std::to_string(vector_width) + "\n"
         "template <typename S> struct alignas(sizeof(S) * CS_VEC) CsVec { S v[CS_VEC]; };\n"
         "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kJitBlockThreads) + ") " + kernel_name +
         "(const CsJitArgs a) {\n"
         "  const long long step = (long long)gridDim.x * blockDim.x;\n"
         "  for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t * CS_VEC < a.numel; t += step) {\n"
         "    const long long base = t * CS_VEC;\n"
         "    if (base + CS_VEC <= a.numel) {\n" +
         device_vector_body(k) +
         "    } else {\n"
         "      for (long long i = base; i < a.numel; ++i) {\n"
         "        long long off[" + n + "];\n"
         "        for (int k = 0; k < " + n + "; ++k) off[k] = i;\n"
         "        cs_element(a, off);\n"
         "      }\n    }\n  }\n}\n";
}

}  // namespace

std::string host_jit_source(const JitKernel& kernel, const std::string& kernel_name) {
  return common_part(kernel) + host_shell(kernel, kernel_name);
}

std::string device_jit_source(const JitKernel& kernel, int vector_width, const std::string& kernel_name) {
  return common_part(kernel) + (kernel.contiguous ? device_flat_shell(kernel, vector_width, kernel_name)
                                                  : device_strided_shell(kernel, kernel_name));
}

std::string entry_function_name(const std::string& code) {
  // template <...> [qualifiers and return type words] name (
  static const std::regex pattern(R"(template\s*<[^{};]*?>\s*(?:[\w:<>,*&]+\s+)+?(\w+)\s*\()");
  std::string name;
  for (auto it = std::sregex_iterator(code.begin(), code.end(), pattern); it != std::sregex_iterator(); ++it) {
    name = (*it)[1].str();
  }
  return name;
}

std::string jit_kernel_name(const JitKernel& kernel, int vector_width) {
  const std::string& name = kernel.program->name;
  if (!kernel.contiguous) return name + "_kernel";
  if (vector_width > 1) return name + "_vectorized" + std::to_string(vector_width) + "_kernel";
  return name + "_contiguous_kernel";
}

std::string jit_cache_key(const JitKernel& kernel, int vector_width, const std::string& target) {
  const JitProgram& p = *kernel.program;
  std::string key = target + '\n' + p.name + '\n' + std::to_string(p.num_outputs) + (p.return_by_ref ? "r" : "v") + '\n' +
                    std::to_string(p.scalars.size()) + '\n' + dtype_name(kernel.output) + '\n';
  for (DType dtype : kernel.inputs) key += std::string(dtype_name(dtype)) + ',';
  key += '\n' + std::string(kernel.contiguous ? "flat" : "strided") + std::to_string(vector_width) + '\n';
  return key + p.code;
}

}  // namespace cudascope::cuda::detail
