#pragma once
// A prometheus::Collectable that reads cudascope's figures when Prometheus scrapes.

#include <cudascope/metrics/metrics.h>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <string>
#include <vector>

namespace cudascope::metrics::detail {

// The host's name ("unknown" when it cannot be read).
std::string host_name();

class RuntimeCollector final : public prometheus::Collectable {
 public:
  explicit RuntimeCollector(MetricsOptions options);
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  MetricsOptions options_;
  std::vector<prometheus::ClientMetric::Label> constant_labels_;
};

}  // namespace cudascope::metrics::detail
