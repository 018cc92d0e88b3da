// jiterator.h: the functions' creation (argument checks) and calls (scalar overrides).
#include <cudascope/cuda/jiterator.h>

#include "jit_launch.h"
#include "jit_source.h"

#include "../check.h"

#include <atomic>
#include <cctype>
#include <set>

namespace cudascope::cuda {
namespace detail {
namespace {

std::atomic<std::int64_t> compiled_kernels{0};

bool is_identifier(const std::string& text) {
  if (text.empty() || std::isdigit(static_cast<unsigned char>(text[0]))) return false;
  for (char c : text) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

std::shared_ptr<const JitProgram> make_program(const std::string& code, const std::string& name, int num_outputs,
                                               bool return_by_ref, std::vector<jiterator::ScalarArg> scalars,
                                               const char* call) {
  auto program = std::make_shared<JitProgram>();
  program->code = code;
  program->name = name.empty() ? entry_function_name(code) : name;
  CUDASCOPE_CHECK(is_identifier(program->name), error_code::kInvalidValue, call,
                  name.empty() ? "no template function found in the code string (expected e.g. "
                                 "'template <typename T> T f(T x) { ... }'):\n" + code
                               : "the entry name '" + name + "' is not a C++ identifier");
  CUDASCOPE_CHECK(num_outputs >= 1 && num_outputs <= kJitMaxOutputs, error_code::kInvalidValue, call,
                  "num_outputs must be from 1 to 8, not " + std::to_string(num_outputs));
  CUDASCOPE_CHECK(scalars.size() <= static_cast<std::size_t>(kJitMaxScalars), error_code::kInvalidValue, call,
                  "at most " + std::to_string(kJitMaxScalars) + " scalar arguments, not " + std::to_string(scalars.size()));
  std::set<std::string> seen;
  for (const auto& scalar : scalars) {
    CUDASCOPE_CHECK(is_identifier(scalar.name) && seen.insert(scalar.name).second, error_code::kInvalidValue, call,
                    "scalar argument '" + scalar.name + "' must be a C++ identifier, declared once");
  }
  program->num_outputs = num_outputs;
  program->return_by_ref = return_by_ref;
  program->scalars = std::move(scalars);
  return program;
}

// The scalars' values for one call: the defaults, overridden by name.
std::vector<double> scalar_values(const JitProgram& program, const std::vector<jiterator::ScalarArg>& overrides) {
  std::vector<double> values;
  for (const auto& scalar : program.scalars) values.push_back(scalar.value);
  for (const auto& given : overrides) {
    bool found = false;
    for (std::size_t i = 0; i < program.scalars.size() && !found; ++i) {
      found = program.scalars[i].name == given.name;
      if (found) values[i] = given.value;
    }
    std::string declared;
    for (const auto& scalar : program.scalars) declared += (declared.empty() ? "" : ", ") + scalar.name;
    CUDASCOPE_CHECK(found, error_code::kInvalidValue, "cudascope::cuda::jiterator",
                    "'" + given.name + "' is not a scalar argument of " + program.name + " (declared: " +
                        (declared.empty() ? "none" : declared) + ")");
  }
  return values;
}

}  // namespace

void note_jit_compile() noexcept { compiled_kernels.fetch_add(1, std::memory_order_relaxed); }

}  // namespace detail

namespace jiterator {

Tensor JitFunction::operator()(const std::vector<Tensor>& inputs, const std::vector<ScalarArg>& scalars) const {
  return detail::run_jit_program(*program_, inputs, detail::scalar_values(*program_, scalars)).front();
}

const std::string& JitFunction::name() const noexcept { return program_->name; }

std::vector<Tensor> MultiOutputJitFunction::operator()(const std::vector<Tensor>& inputs,
                                                       const std::vector<ScalarArg>& scalars) const {
  return detail::run_jit_program(*program_, inputs, detail::scalar_values(*program_, scalars));
}

const std::string& MultiOutputJitFunction::name() const noexcept { return program_->name; }
int MultiOutputJitFunction::num_outputs() const noexcept { return program_->num_outputs; }

JitFunction create_jit_fn(const std::string& code, const std::string& name, std::vector<ScalarArg> scalars) {
  JitFunction fn;
  fn.program_ = detail::make_program(code, name, 1, false, std::move(scalars), "jiterator::create_jit_fn");
  return fn;
}

MultiOutputJitFunction create_multi_output_jit_fn(const std::string& code, const std::string& name, int num_outputs,
                                                  std::vector<ScalarArg> scalars) {
  MultiOutputJitFunction fn;
  fn.program_ = detail::make_program(code, name, num_outputs, true, std::move(scalars),
                                     "jiterator::create_multi_output_jit_fn");
  return fn;
}

std::int64_t compiled_kernel_count() noexcept { return detail::compiled_kernels.load(std::memory_order_relaxed); }

}  // namespace jiterator
}  // namespace cudascope::cuda
