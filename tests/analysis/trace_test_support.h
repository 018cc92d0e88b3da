#pragma once
// Helpers shared by the trace reader's tests: fixture paths, temp files, gzip in memory,
// re-saving a trace with Python's json module (the way users re-save traces), and loading one.

#include <cudascope/analysis/trace_loader.h>

#include <gtest/gtest.h>
#include <zlib.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

namespace cudascope::trace_testing {

inline std::string data_path(const std::string& name) { return std::string(CUDASCOPE_TEST_DATA) + "/" + name; }

inline std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("cudascope_trace_" + std::to_string(getpid()) + "_" + name)).string();
}

inline std::string gunzip_file(const std::string& path) {
  gzFile in = gzopen(path.c_str(), "rb");
  std::string text;
  if (in == nullptr) return text;
  char chunk[1 << 16];
  for (int n; (n = gzread(in, chunk, sizeof chunk)) > 0;) text.append(chunk, static_cast<std::size_t>(n));
  gzclose(in);
  return text;
}

inline std::string read_text(const std::string& path) {
  if (path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0) return gunzip_file(path);
  std::ifstream in(path, std::ios::binary);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

inline std::string gzip(const std::string& text, int level = 6) {
  z_stream z{};
  deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, static_cast<uLong>(text.size())) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// Re-saves `in` with Python's json module: json.dump(obj, out, **kwargs) where `kwargs` is
// Python source ("indent=2", "separators=(',', ':')", "sort_keys=True"). Empty on failure.
inline std::string python_resave(const std::string& in, const std::string& kwargs, const std::string& name) {
  const std::string out = temp_path(name);
  const std::string script = temp_path(name + ".py");
  write_text(script,
             "import gzip, json, sys\n"
             "src = sys.argv[1]\n"
             "f = gzip.open(src, 'rt') if src.endswith('.gz') else open(src)\n"
             "obj = json.load(f)\n"
             "with open(sys.argv[2], 'w') as o:\n"
             "    json.dump(obj, o, " + kwargs + ")\n");
  const std::string command = "python3 '" + script + "' '" + in + "' '" + out + "'";
  const int rc = std::system(command.c_str());
  std::filesystem::remove(script);
  if (rc != 0) return {};
  return out;
}

// The model of the trace at `path`, with a test failure naming the error if it cannot be read.
inline std::unique_ptr<analysis::TraceModel> load(const std::string& path) {
  auto loaded = analysis::load_trace(path);
  EXPECT_TRUE(loaded.ok()) << loaded.error;
  return std::move(loaded.model);
}

}  // namespace cudascope::trace_testing
