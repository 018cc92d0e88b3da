#pragma once
// Device health (NVML, or the simulated device's model) as metric families.

#include "families.h"

#include <cudascope/cuda/telemetry.h>

namespace cudascope::metrics::detail {

// Appends one device's figures under `base` labels. A figure `health` leaves empty gets no
// series (absent, not zero); with `log_absent`, the log says so once per device and figure.
void add_health(Families& families, int device, const cuda::DeviceTelemetry& health, const Labels& base,
                bool log_absent);

}  // namespace cudascope::metrics::detail
