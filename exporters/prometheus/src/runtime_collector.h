#pragma once
// A prometheus::Collectable that reads cudascope's figures when Prometheus scrapes.

#include <cudascope/metrics/metrics.h>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <vector>

namespace cudascope::metrics::detail {

class RuntimeCollector final : public prometheus::Collectable {
 public:
  explicit RuntimeCollector(MetricsOptions options);
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  MetricsOptions options_;
};

}  // namespace cudascope::metrics::detail
