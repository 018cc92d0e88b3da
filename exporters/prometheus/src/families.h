#pragma once
// Metric families gathered in a fixed order while devices are visited, so each family's
// samples come out together (one HELP/TYPE per name, as the exposition format wants).

#include <prometheus/client_metric.h>
#include <prometheus/metric_family.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace cudascope::metrics::detail {

using Labels = std::vector<prometheus::ClientMetric::Label>;

class Families {
 public:
  prometheus::MetricFamily& get(const std::string& name, const std::string& help, prometheus::MetricType type) {
    auto found = index_.find(name);
    if (found != index_.end()) return families_[found->second];
    index_.emplace(name, families_.size());
    families_.push_back(prometheus::MetricFamily{name, help, type, {}});
    return families_.back();
  }
  std::vector<prometheus::MetricFamily> take() { return std::move(families_); }

 private:
  std::map<std::string, std::size_t> index_;
  std::vector<prometheus::MetricFamily> families_;
};

// One gauge or counter sample.
inline void add(Families& families, const std::string& name, const std::string& help, prometheus::MetricType type,
                Labels labels, double value) {
  prometheus::ClientMetric metric;
  metric.label = std::move(labels);
  if (type == prometheus::MetricType::Counter) metric.counter.value = value;
  else metric.gauge.value = value;
  families.get(name, help, type).metric.push_back(std::move(metric));
}

}  // namespace cudascope::metrics::detail
