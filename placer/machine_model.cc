// Machine descriptions: parsed from text (pf-place --devices), from the local devices with their
// measured rates, and the rates file pf-bench device_rates writes.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "placeflow/core/device_name.h"
#include "placeflow/placer/cost_model.h"

namespace pf {

namespace {

constexpr int kMaxModelDevices = 4096;  // per type
constexpr int kMaxModelThreads = 1024;

// All of `text` as a positive finite number, else -1.
double Positive(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  return end != text.c_str() && *end == '\0' && std::isfinite(v) && v > 0 ? v : -1;
}

std::string Trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// "450GB/s", "100Gbit/s", "25" (GB/s) -> GB/s.
StatusOr<double> ParseBandwidth(const std::string& text) {
  const std::string t = Lower(text);
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  const std::string unit = end;
  if (end == t.c_str() || !std::isfinite(v) || v <= 0)
    return errors::InvalidArgument("bad bandwidth '", text, "'");
  if (unit.empty() || unit == "gb/s") return v;
  if (unit == "gbit/s" || unit == "gb/s(bit)") return v / 8;
  if (unit == "mb/s") return v / 1e3;
  return errors::InvalidArgument("bad bandwidth '", text, "' (GB/s, Gbit/s or MB/s)");
}

Status ParseDevices(const std::string& item, MachineModel* m) {
  const size_t colon = item.find(':');
  const std::string type = Lower(item.substr(0, colon));
  if (type != "cpu" && type != "gpu")
    return errors::InvalidArgument("unknown device type '", item.substr(0, colon), "'");
  std::string rest = item.substr(colon + 1);
  double gflops = 0;
  if (size_t at = rest.find('@'); at != std::string::npos) {
    gflops = Positive(rest.substr(at + 1));
    if (gflops <= 0) return errors::InvalidArgument("bad GFLOP/s in '", item, "'");
    rest = rest.substr(0, at);
  }
  int64_t memory = 0;
  if (size_t x = Lower(rest).find('x'); x != std::string::npos) {
    PF_ASSIGN_OR_RETURN(memory, ParseBytes(rest.substr(x + 1)));
    rest = rest.substr(0, x);
  }
  const double count = Positive(rest);
  if (count < 1 || count != std::floor(count) || count > kMaxModelDevices)
    return errors::InvalidArgument("bad device count in '", item, "' (1 to ", kMaxModelDevices,
                                   ")");
  const std::string upper = type == "cpu" ? kDeviceCpu : kDeviceGpu;
  if (type == "cpu" && !m->cpus_given) {  // the first cpu item replaces the default host
    m->devices.erase(std::remove_if(m->devices.begin(), m->devices.end(),
                                    [](const DeviceModel& d) { return d.type == kDeviceCpu; }),
                     m->devices.end());
    m->cpus_given = true;
  }
  int next = 0;  // a type given again goes on numbering
  for (const DeviceModel& d : m->devices) next += d.type == upper;
  for (int i = 0; i < static_cast<int>(count); ++i) {
    DeviceModel d = DefaultDeviceModel(upper);
    d.name = DeviceName::FullName("localhost", 0, 0, upper, next + i);
    d.memory_bytes = memory;
    if (gflops > 0) d.gflops = gflops;
    m->devices.push_back(std::move(d));
  }
  return Status::OK();
}

}  // namespace

StatusOr<int64_t> ParseBytes(const std::string& text) {
  const std::string t = Lower(text);
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  const std::string unit = end;
  if (end == t.c_str() || !std::isfinite(v) || v < 0)
    return errors::InvalidArgument("bad memory size '", text, "'");
  double scale = 0;
  if (unit.empty() || unit == "b") scale = 1;
  if (unit == "kb") scale = 1e3;
  if (unit == "mb") scale = 1e6;
  if (unit == "gb") scale = 1e9;
  if (unit == "kib") scale = 1024.0;
  if (unit == "mib") scale = 1024.0 * 1024;
  if (unit == "gib") scale = 1024.0 * 1024 * 1024;
  if (scale == 0)
    return errors::InvalidArgument("bad memory size '", text, "' (B, KB, MB, GB, KiB, MiB, GiB)");
  if (v * scale >= 9.2e18) return errors::InvalidArgument("memory size '", text, "' is too large");
  return static_cast<int64_t>(v * scale);
}

std::string ShortDeviceName(const std::string& full_name) {
  DeviceName d;
  if (!DeviceName::Parse(full_name, &d) || !d.has_type) return Lower(full_name);
  return Lower(d.type) + ":" + std::to_string(d.has_id ? d.id : 0);
}

StatusOr<MachineModel> ParseMachine(const std::string& text) {
  MachineModel m;
  DeviceModel host = DefaultDeviceModel(kDeviceCpu);
  host.name = DeviceName::FullName("localhost", 0, 0, kDeviceCpu, 0);
  m.devices.push_back(host);
  std::stringstream in(text);
  std::string item;
  int threads = 0;
  while (std::getline(in, item, ',')) {
    item = Trim(item);
    if (item.empty()) continue;
    Status s;
    if (size_t eq = item.find('='); eq != std::string::npos) {
      const std::string key = Lower(item.substr(0, eq)), value = item.substr(eq + 1);
      if (key == "threads") {
        const double t = Positive(value);
        threads = t == std::floor(t) && t <= kMaxModelThreads ? static_cast<int>(t) : 0;
        if (threads <= 0)
          return errors::InvalidArgument("Machine '", text, "', item '", item,
                                         "': bad thread count");
        continue;
      }
      LinkModel* link = key == "nvlink"    ? &m.gpu_gpu
                        : key == "pcie"    ? &m.host_gpu
                        : key == "host"    ? &m.host_host
                        : key == "network" ? &m.network
                                           : nullptr;
      if (link == nullptr) {
        s = errors::InvalidArgument("unknown key '", key,
                                    "' (nvlink, pcie, host, network, threads)");
      } else {
        StatusOr<double> bw = ParseBandwidth(value);
        if (bw.ok()) link->gbytes_per_s = *bw;
        s = bw.status();
        if (key == "nvlink" && s.ok()) link->latency_us = 5;
      }
    } else if (item.find(':') != std::string::npos) {
      s = ParseDevices(item, &m);
    } else {
      s = errors::InvalidArgument("expected TYPE:N[xMEM][@GFLOPS] or KEY=VALUE");
    }
    if (!s.ok())
      return errors::InvalidArgument("Machine '", text, "', item '", item, "': ", s.message());
  }
  for (DeviceModel& d : m.devices) {
    if (d.type == kDeviceCpu && threads > 0) {
      d.gflops *= threads;
      d.gbytes_per_s *= threads;
      d.threads = threads;
    }
  }
  return m;
}

StatusOr<std::map<std::string, int64_t>> ParseDeviceMemory(const std::string& text) {
  std::map<std::string, int64_t> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string::npos)
      return errors::InvalidArgument("device memory '", item, "': expected DEVICE=SIZE");
    StatusOr<int64_t> bytes = ParseBytes(item.substr(eq + 1));
    if (!bytes.ok())
      return errors::InvalidArgument("device memory '", item, "': ", bytes.status().message());
    out[ShortDeviceName(item.substr(0, eq))] = *bytes;
  }
  return out;
}

std::string DeviceRatesPath() {
  if (const char* p = std::getenv("PF_DEVICE_RATES"); p != nullptr && *p) return p;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x)
    return std::string(x) + "/placeflow/device_rates";
  if (const char* h = std::getenv("HOME"); h != nullptr && *h)
    return std::string(h) + "/.cache/placeflow/device_rates";
  return "";
}

// One line per device type: "CPU gflops=61.2 gbytes_per_s=8.4 op_overhead_us=0.9", rates of
// one thread (a CPU) or of the whole device.
DeviceRates LoadDeviceRates(const std::string& path) {
  DeviceRates rates;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::stringstream fields(line);
    std::string type, kv;
    if (!(fields >> type) || type[0] == '#') continue;
    if (type == "LINK") {  // "LINK host_host gbytes_per_s=20 latency_us=12.5"
      std::string which;
      fields >> which;
      while (fields >> kv) {
        const size_t eq = kv.find('=');
        const double v = eq == std::string::npos ? 0 : Positive(kv.substr(eq + 1));
        if (v <= 0 || which != "host_host") continue;
        if (kv.substr(0, eq) == "gbytes_per_s") rates.host_host.gbytes_per_s = v;
        if (kv.substr(0, eq) == "latency_us") rates.host_host.latency_us = v;
      }
      continue;
    }
    DeviceModel d = DefaultDeviceModel(type);
    while (fields >> kv) {
      const size_t eq = kv.find('=');
      if (eq == std::string::npos) continue;
      const double v = Positive(kv.substr(eq + 1));
      if (v <= 0) continue;  // a rate must be a positive finite number: the default stays
      const std::string key = kv.substr(0, eq);
      if (key == "gflops") d.gflops = v;
      if (key == "gbytes_per_s") d.gbytes_per_s = v;
      if (key == "op_overhead_us") d.op_overhead_us = v;
    }
    rates.by_type[type] = d;
  }
  return rates;
}

Status SaveDeviceRates(const DeviceRates& rates, const std::string& path) {
  std::ofstream out(path);
  if (!out) return errors::Unavailable("cannot write the device rates file '", path, "'");
  out << "# placeflow device rates (pf-bench device_rates): per CPU thread, per GPU\n";
  for (const auto& [type, d] : rates.by_type) {
    out << type << " gflops=" << d.gflops << " gbytes_per_s=" << d.gbytes_per_s
        << " op_overhead_us=" << d.op_overhead_us << "\n";
  }
  if (rates.host_host.latency_us > 0) {
    out << "LINK host_host gbytes_per_s=" << rates.host_host.gbytes_per_s
        << " latency_us=" << rates.host_host.latency_us << "\n";
  }
  return out ? Status::OK() : errors::Unavailable("writing '", path, "' failed");
}

StatusOr<MachineModel> LocalMachine(const DeviceSet& devices, const DeviceRates& rates,
                                    int cpu_threads, const std::map<std::string, int64_t>& memory) {
  MachineModel m;
  if (rates.host_host.latency_us > 0) m.host_host.latency_us = rates.host_host.latency_us;
  if (rates.host_host.gbytes_per_s > 0) m.host_host.gbytes_per_s = rates.host_host.gbytes_per_s;
  std::map<std::string, int64_t> left = memory;
  for (const Device* dev : devices.devices()) {
    auto it = rates.by_type.find(dev->device_type());
    DeviceModel d = it != rates.by_type.end() ? it->second : DefaultDeviceModel(dev->device_type());
    d.name = dev->name();
    d.type = dev->device_type();
    d.task = dev->parsed_name().task;
    if (d.type == kDeviceCpu) {
      d.threads = std::max(1, cpu_threads);
      d.gflops *= d.threads;
      d.gbytes_per_s *= d.threads;
    }
    for (const std::string& key : {dev->name(), ShortDeviceName(dev->name())}) {
      if (auto mem = left.find(key); mem != left.end()) {
        d.memory_bytes = mem->second;
        left.erase(mem);
      }
    }
    m.devices.push_back(std::move(d));
  }
  if (!left.empty()) {
    return errors::InvalidArgument("Device memory names an unknown device '", left.begin()->first,
                                   "'; devices: ", devices.NamesForError());
  }
  return m;
}

}  // namespace pf
