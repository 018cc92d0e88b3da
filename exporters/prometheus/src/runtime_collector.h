#pragma once
// A prometheus::Collectable that reads cudascope's figures when Prometheus scrapes.

#include "families.h"
#include "health_sampler.h"

#include <cudascope/metrics/metrics.h>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <memory>
#include <string>
#include <vector>

namespace cudascope::metrics::detail {

// The host's name ("unknown" when it cannot be read).
std::string host_name();

class RuntimeCollector final : public prometheus::Collectable {
 public:
  // With options.health_interval above 0 (and device health on, outside process mode), a
  // HealthSampler reads the devices on its own thread and scrapes show its latest reading.
  explicit RuntimeCollector(MetricsOptions options);
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  MetricsOptions options_;
  Labels constant_labels_;
  std::unique_ptr<HealthSampler> sampler_;
};

}  // namespace cudascope::metrics::detail
