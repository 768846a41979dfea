// couplescope's AOTInductor host: what a compiled simulation code would do to call a model
// exported with torch.export and compiled ahead of time into a .pt2 package.
//
//   AotiHost  the package loaded once with torch::inductor::AOTIModelPackageLoader (libtorch's
//             C++ loader for aoti_compile_and_package's output; no Python, no TorchScript
//             interpreter); each call wraps the host arrays with the layout's strides
//             (torch::from_blob, no copy: the package was compiled for exactly these
//             strides), runs the package under the run's grad-mode guard, and writes the
//             result into the tensor over the host output (copy_), as DirectHost does.
//
// The same contract as DirectHost (host.cpp): call(profiling) returns (whole, marshal_in,
// h2d, forward, d2h, marshal_out, error), phases timed with steady_clock, profiler ranges
// only in profiled iterations, and call_batch runs iterations back to back (run_batch in
// host_common.h). On a GPU the inputs are copied to the device (h2d) and the result back
// into the host output (d2h), each synchronised before its timestamps.
//
// A torch whose wheel lacks the loader's header (older than 2.6) builds this module
// without AotiHost; HAS_AOTI says which.

#include "host_common.h"

#include <torch/cuda.h>

#include <memory>

#if __has_include(<torch/csrc/inductor/aoti_package/model_package_loader.h>)
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#define COUPLESCOPE_HAS_AOTI 1
#endif

namespace couplescope_native {

#ifdef COUPLESCOPE_HAS_AOTI

namespace {

class AotiHost : public TorchHostBase<AotiHost> {
 public:
  AotiHost(std::string path, std::string device, std::string grad_mode, std::vector<Call> calls)
      : TorchHostBase(device, grad_mode, std::move(calls)), path_(std::move(path)) {}

  // The package's shared library and weights, loaded (and unpacked) once.
  void load() {
    try {
      loader_ = std::make_unique<torch::inductor::AOTIModelPackageLoader>(
          path_, "model", false, 1, on_gpu_ ? device_.index() : static_cast<c10::DeviceIndex>(-1));
    } catch (const c10::Error& e) {
      rethrow_without_backtrace(e);
    }
  }

  bool ready() const { return loader_ != nullptr; }

  // One forward call: the host arrays wrapped (from_blob, the layout's strides), the
  // package run under the grad-mode guard, the result copied into the host output.
  bool run(const Call& c, double* phase, std::string& error) {
    sync();
    PhaseRange in_range(profiling_, "couplescope/marshal_in");
    auto t0 = Clock::now();
    std::vector<at::Tensor> inputs;
    inputs.reserve(c.inputs.size());
    for (const auto& a : c.inputs) inputs.push_back(wrap(a));
    torch::Tensor host_out = wrap(c.output);
    auto t1 = Clock::now();
    in_range.end();
    phase[0] += seconds(t0, t1);
    if (on_gpu_) {
      PhaseRange h2d(profiling_, "couplescope/h2d");
      t0 = Clock::now();
      for (auto& t : inputs) t = t.to(device_);
      sync();
      phase[1] += seconds(t0, Clock::now());
    }
    sync();
    PhaseRange forward(profiling_, "couplescope/forward");
    t0 = Clock::now();
    std::vector<at::Tensor> result;
    if (inference_) {
      c10::InferenceMode guard(true);
      result = loader_->run(inputs);
    } else {
      torch::AutoGradMode guard(false);
      result = loader_->run(inputs);
    }
    sync();
    t1 = Clock::now();
    forward.end();
    phase[2] += seconds(t0, t1);
    if (result.size() != 1) {
      error = "model returned " + std::to_string(result.size()) +
              " tensors, host expects one of shape " + shape_text(host_out.sizes());
      return false;
    }
    if (result[0].sizes() != host_out.sizes()) {
      error = "model returned shape " + shape_text(result[0].sizes()) + ", host expects " +
              shape_text(host_out.sizes());
      return false;
    }
    sync();
    PhaseRange out_range(profiling_, on_gpu_ ? "couplescope/d2h" : "couplescope/marshal_out");
    t0 = Clock::now();
    host_out.copy_(result[0]);
    sync();
    result.clear();
    inputs.clear();
    host_out = torch::Tensor();
    t1 = Clock::now();
    out_range.end();
    phase[on_gpu_ ? 3 : 4] += seconds(t0, t1);
    return true;
  }

 private:
  std::string path_;
  std::unique_ptr<torch::inductor::AOTIModelPackageLoader> loader_;
};

}  // namespace

void register_aoti(py::module_& m) {
  py::class_<AotiHost>(m, "AotiHost")
      .def(py::init<std::string, std::string, std::string, std::vector<Call>>())
      .def("load", &AotiHost::load)
      .def("call", &AotiHost::call)
      .def("call_batch", &run_batch<AotiHost>);
  m.attr("HAS_AOTI") = true;
}

#else

void register_aoti(py::module_& m) { m.attr("HAS_AOTI") = false; }

#endif

}  // namespace couplescope_native
