// The GPU model for Python (device.hpp, docs/gpu_model.md): the catalogue as dicts in the
// fields of a devices file, a kernel's class, and the GPU a graph's trace ran on. Thin: the
// rules live in lib/model.
#include <pybind11/stl.h>

#include "common.hpp"
#include "daydream/device.hpp"

namespace daydream::python {
namespace {

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
