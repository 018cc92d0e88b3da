#pragma once
// What `cudascope diff` prints: aligned tables for people, one JSON object for scripts.
// The numbers come from the analysis library (snapshot_diff.h, trace_diff.h, diff_gate.h);
// this only lays them out. `top` limits each table's rows (0: all).

#include <cudascope/analysis/diff_gate.h>
#include <cudascope/analysis/snapshot_diff.h>
#include <cudascope/analysis/trace_diff.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace cudascope::cli {

struct DiffFiles {
  std::string a, b;
};

std::string snapshot_diff_text(const DiffFiles& files, const analysis::SnapshotDiff& diff, size_t top);
std::string trace_diff_text(const DiffFiles& files, const analysis::TraceDiff& diff, size_t top);
nlohmann::json snapshot_diff_json(const DiffFiles& files, const analysis::SnapshotDiff& diff, size_t top);
nlohmann::json trace_diff_json(const DiffFiles& files, const analysis::TraceDiff& diff, size_t top);
nlohmann::json gate_json(const analysis::GateResult& result);

}  // namespace cudascope::cli
