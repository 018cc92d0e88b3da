#include <cudascope/analysis/stack_frames.h>

#include <algorithm>
#include <array>
#include <cctype>

namespace cudascope::analysis {
namespace {

bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

// The lists memory_viz (torch/utils/viz/MemoryViz.js, frameFilter) drops, plus the caching
// allocators' own frames: PyTorch's and ours.
constexpr std::array<std::string_view, 10> kHiddenNames = {
    "unwind::unwind", "CapturedTraceback::gather", "gather_with_cpp", "PyEval_", "PyObject_", "PyFunction_",
    "CUDACachingAllocator::", "c10::cuda::CUDAAllocator", "cudascope::cuda::", "__libc_start_"};
constexpr std::array<std::string_view, 12> kHiddenFiles = {
    "core/boxing", "/Register", "/Redispatch", "pythonrun.c", "Modules/main.c", "Objects/call.c",
    "Objects/methodobject.c", "pycore_ceval.h", "ceval.c", "cpython/abstract.h", "CUDACachingAllocator.cpp",
    "libcudascope_torch_allocator"};

// C++ namespaces of libraries, matched as whole leading tokens of a demangled name (which
// may begin with a return type: "at::TensorBase at::detail::empty_cuda(...)").
constexpr std::array<std::string_view, 8> kLibraryNamespaces = {"at::", "c10::", "torch::", "std::", "pybind11::",
                                                                "cudascope::", "__gnu_cxx::", "caffe2::"};
// Paths of library files: anywhere in the path, or (relative paths torch and CPython record)
// at its start.
constexpr std::array<std::string_view, 8> kLibraryPaths = {"/torch/", "site-packages", "dist-packages", "/lib/python",
                                                           "/aten/", "/c10/", "/usr/include/", "/usr/lib/"};
constexpr std::array<std::string_view, 7> kLibraryPrefixes = {"torch/", "aten/", "c10/", "Objects/", "Python/",
                                                              "Modules/", "Include/"};

bool token_at(std::string_view name, size_t pos) {
  return pos == 0 || !(std::isalnum(static_cast<unsigned char>(name[pos - 1])) || name[pos - 1] == '_');
}

bool in_library_namespace(std::string_view name) {
  for (std::string_view ns : kLibraryNamespaces)
    for (size_t pos = name.find(ns); pos != std::string_view::npos; pos = name.find(ns, pos + 1))
      if (token_at(name, pos)) return true;
  return name.starts_with("_Py") || name.starts_with("Py") || name.starts_with("THP");
}

bool shared_object(std::string_view filename) {
  return filename.ends_with(".so") || contains(filename, ".so.");
}

char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

}  // namespace

bool hidden_frame(std::string_view name, std::string_view filename) {
  if (name == "_start") return true;
  for (std::string_view part : kHiddenNames)
    if (contains(name, part)) return true;
  for (std::string_view part : kHiddenFiles)
    if (contains(filename, part)) return true;
  return false;
}

bool library_frame(std::string_view name, std::string_view filename) {
  if (filename.empty() || filename == "??" || filename.front() == '<' || shared_object(filename)) return true;
  for (std::string_view part : kLibraryPaths)
    if (contains(filename, part)) return true;
  for (std::string_view part : kLibraryPrefixes)
    if (filename.starts_with(part)) return true;
  return in_library_namespace(name);
}

FrameIndex::FrameIndex(const Snapshot& snapshot) : snapshot_(&snapshot), kind_(snapshot.frames.size()) {
  for (FrameId f = 0; f < kind_.size(); ++f) {
    const Frame& frame = snapshot.frames.get(f);
    const std::string_view name = snapshot.str(frame.name), file = snapshot.str(frame.filename);
    kind_[f] = hidden_frame(name, file) ? Kind::hidden : library_frame(name, file) ? Kind::library : Kind::user;
  }
}

std::vector<FrameId> FrameIndex::visible(StackId stack) const {
  std::vector<FrameId> out;
  for (FrameId f : snapshot_->stack(stack))
    if (!hidden(f)) out.push_back(f);
  return out;
}

size_t FrameIndex::hidden_count(StackId stack) const {
  const auto frames = snapshot_->stack(stack);
  return static_cast<size_t>(std::count_if(frames.begin(), frames.end(), [this](FrameId f) { return hidden(f); }));
}

std::optional<FrameId> FrameIndex::top_frame(StackId stack) const {
  for (FrameId f : snapshot_->stack(stack))
    if (!hidden(f)) return f;
  return std::nullopt;
}

std::optional<FrameId> FrameIndex::user_frame(StackId stack) const {
  for (FrameId f : snapshot_->stack(stack))
    if (user(f)) return f;
  return top_frame(stack);
}

std::vector<uint8_t> FrameIndex::match_frames(std::string_view needle) const {
  std::string want(needle);
  std::transform(want.begin(), want.end(), want.begin(), lower);
  std::vector<uint8_t> out(kind_.size(), 0);
  for (FrameId f = 0; f < kind_.size(); ++f) {
    if (hidden(f)) continue;
    std::string text = snapshot_->frame_text(f);
    std::transform(text.begin(), text.end(), text.begin(), lower);
    out[f] = contains(text, want) ? 1 : 0;
  }
  return out;
}

bool FrameIndex::stack_matches(StackId stack, const std::vector<uint8_t>& matches) const {
  for (FrameId f : snapshot_->stack(stack))
    if (f < matches.size() && matches[f]) return true;
  return false;
}

}  // namespace cudascope::analysis
