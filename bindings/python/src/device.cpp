// The GPU model for Python (device.hpp, cost.hpp, docs/gpu_model.md): the catalogue as dicts in
// the fields of a devices file, a kernel's class, the GPU a graph's trace ran on, list prices and
// what a job costs. Thin: the rules live in lib/model.
#include <pybind11/stl.h>

#include <cmath>

#include "common.hpp"
#include "daydream/cost.hpp"
#include "daydream/device.hpp"

namespace daydream::python {
namespace {

using namespace pybind11::literals;

py::dict device_dict(const DeviceSpec& d) {
  py::dict out;
  out["name"] = d.name;
  out["aliases"] = d.aliases;
  out["vendor"] = d.vendor;
  out["compute_major"] = d.compute_major;
  out["compute_minor"] = d.compute_minor;
  out["sm_count"] = d.sm_count;
  for (const DeviceNumberField& field : device_number_fields())
    out[py::str(std::string(field.key))] = d.*field.member / field.unit;
  out["source"] = d.source;
  return out;
}

py::object none_or(bool known, double value) { return known ? py::object(py::float_(value)) : py::object(py::none()); }

py::dict cost_dict(const RunCost& c) {
  py::dict out;
  out["gpu"] = c.gpu.empty() ? py::object(py::none()) : py::object(py::str(c.gpu));
  out["gpus"] = c.gpus;
  out["iterations_per_s"] = c.iterations_per_s;
  out["samples_per_s"] = none_or(c.samples_per_s > 0, c.samples_per_s);
  out["usd_per_gpu_hour"] = none_or(c.price.has_value(), c.price ? c.price->usd_per_gpu_hour : 0);
  out["usd_per_1k_iterations"] = none_or(c.price.has_value(), c.usd_per_1k_iterations);
  out["price_source"] = c.price ? py::object(py::str(c.price->source)) : py::object(py::none());
  return out;
}

/// The catalogue and price list of one sweep or run_cost call (daydream._core._Pricing).
struct Pricing {
  DeviceCatalog catalog;
  PriceList prices;
  /// `price` as sweep's --price takes it: "builtin" or a prices file over the built-in list.
  Pricing(const std::string& price, const std::optional<std::string>& devices)
      : catalog(catalog_with(devices)), prices(PriceList::from_option(price, catalog)) {}

  py::dict cost(double iteration_ms, const std::string& gpu, double gpu_memory_bytes, std::int64_t gpus,
                std::int64_t batch_size, const std::string& fallback_gpu) const {
    if (!std::isfinite(iteration_ms) || iteration_ms < 0 || iteration_ms > 1e12)
      throw py::value_error("run_cost: iteration_ms must be a finite number of milliseconds, 0 to 1e12");
    const auto ns = static_cast<TimeNs>(std::llround(iteration_ms * 1e6));
    return cost_dict(run_cost(ns, gpu, gpu_memory_bytes, gpus, catalog, prices, batch_size, fallback_gpu));
  }
};

}  // namespace

DeviceCatalog catalog_with(const std::optional<std::string>& devices) {
  DeviceCatalog catalog = DeviceCatalog::builtin();
  if (devices) catalog.load_json(*devices);  // "" too: an empty path is an error here
  return catalog;
}

void init_device(py::module_& m) {
  m.def(
      "gpus",
      [](const std::optional<std::string>& devices) {
        const DeviceCatalog catalog = catalog_with(devices);
        py::list out;
        for (const DeviceSpec& d : catalog.devices()) out.append(device_dict(d));
        return out;
      },
      py::arg("devices") = py::none(),
      "The GPU catalogue of the GPU model (docs/gpu_model.md): one dict per GPU in the fields of a devices "
      "file (throughputs in TFLOP/s, bandwidths in GB/s, memory in GiB, L2 in MiB, source). `devices`: a JSON "
      "file of more GPUs.");
  m.def(
      "kernel_class",
      [](const std::string& name) {
        const KernelClass k = classify_kernel(name);
        py::dict out;
        out["engine"] = std::string(to_string(k.engine));
        out["precision"] = std::string(to_string(k.precision));
        out["bound"] = std::string(to_string(k.bound));
        out["engine_rule"] = std::string(k.engine_rule);
        out["precision_rule"] = std::string(k.precision_rule);
        return out;
      },
      py::arg("name"),
      "A kernel's class read off its name: {engine: tensor|simt|none, precision: fp32|tf32|fp16|bf16|fp8, bound: "
      "compute|memory, and the name patterns that decided them} (docs/gpu_model.md, \"Kernel classes\").");
  m.def(
      "autocast_time_ratio",
      [](const std::string& name, const std::string& gpu, const std::string& dtype,
         const std::optional<std::string>& devices) {
        const auto precision = parse_precision(dtype);
        if (!precision) throw py::value_error("autocast_time_ratio: unknown dtype '" + dtype + "'");
        return autocast_time_ratio(classify_kernel(name), nullptr, catalog_with(devices).at(gpu), *precision);
      },
      py::arg("name"), py::arg("gpu"), py::arg("dtype") = "fp16", py::arg("devices") = py::none(),
      "How many times longer the kernel `name`, traced on the catalogue GPU `gpu`, takes under torch.autocast to "
      "`dtype` (the amp scenario's GPU model, docs/gpu_model.md); 1 for a kernel already in half precision.");
  m.def(
      "autocast_fp32",
      [](const std::string& name, const std::optional<std::string>& op, bool forward) -> std::optional<std::string> {
        const std::string_view why = autocast_fp32(name, op.value_or(""), forward);
        if (why.empty()) return std::nullopt;
        return std::string(why);
      },
      py::arg("name"), py::arg("operator") = py::none(), py::arg("forward") = true,
      "Why torch.autocast runs the kernel `name` in fp32 (an operator on PyTorch's float32 list, or its backward, "
      "named by `operator`, or one of PyTorch's own softmax/layer_norm/group_norm/nll_loss kernels by its name), "
      "or None: the amp scenario keeps those kernels' time (docs/scenarios/amp.md).");
  m.def(
      "prices",
      [](const std::string& price, const std::optional<std::string>& devices) {
        const Pricing pricing(price, devices);
        py::list out;
        for (const GpuPrice& p : pricing.prices.prices())
          out.append(py::dict("gpu"_a = p.gpu, "usd_per_gpu_hour"_a = p.usd_per_gpu_hour, "source"_a = p.source));
        return out;
      },
      py::arg("price") = "builtin", py::arg("devices") = py::none(),
      "List prices per GPU-hour (docs/gpu_model.md, \"Cost\"): one dict {gpu, usd_per_gpu_hour, source} per GPU. "
      "`price`: \"builtin\" (the dated built-in list) or a JSON prices file whose entries replace or add to it; "
      "`devices`: a devices file, for the names of GPUs beyond the catalogue.");
  m.def(
      "run_cost",
      [](double iteration_ms, const std::string& gpu, std::int64_t gpus, const std::string& price,
         std::int64_t batch_size, const std::optional<std::string>& devices) {
        return Pricing(price, devices).cost(iteration_ms, gpu, 0, gpus, batch_size, "");
      },
      py::arg("iteration_ms"), py::arg("gpu"), py::arg("gpus") = 1, py::arg("price") = "builtin",
      py::arg("batch_size") = 0, py::arg("devices") = py::none(),
      "Throughput and cost of a job taking `iteration_ms` per iteration on `gpus` GPUs named `gpu` (a catalogue "
      "name or alias, or a name as a trace records it): {gpu, gpus, iterations_per_s, samples_per_s (None without "
      "batch_size, samples per GPU per iteration), usd_per_gpu_hour, usd_per_1k_iterations, price_source} (None "
      "where the price list has no price for the GPU). The cost per 1,000 iterations is iteration time x 1000 x gpus "
      "x price / 3600 s.");
  py::class_<Pricing>(m, "_Pricing", "Internal: the catalogue and prices of one daydream.sweep(price=...) call.")
      .def(py::init<const std::string&, const std::optional<std::string>&>(), py::arg("price"), py::arg("devices"))
      .def("cost", &Pricing::cost, py::arg("iteration_ms"), py::arg("gpu"), py::arg("gpu_memory_bytes"),
           py::arg("gpus"), py::arg("batch_size"), py::arg("fallback_gpu"));
  py::reinterpret_borrow<py::class_<GraphBox, GraphPtr>>(m.attr("Graph")).def(
      "traced_gpu",
      [](const GraphPtr& g, const std::optional<std::string>& devices) {
        const DeviceCatalog catalog = catalog_with(devices);
        std::shared_lock lock(g->mutex);
        return device_dict(traced_device(catalog, g->graph.gpus(), g->graph.source_path));
      },
      py::arg("devices") = py::none(),
      "The catalogue entry of the GPU this graph's trace ran on (as daydream.gpus() lists it); raises "
      "daydream.Error when the trace names no GPU the catalogue knows.");
}

}  // namespace daydream::python
