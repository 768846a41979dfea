// couplescope's native host: what a compiled simulation code does to call a model.
//
// Two hosts in one extension module, both called once per iteration from the worker's
// Python loop; the step from Python into call() is outside the timed region, and
// everything inside it is timed here with std::chrono::steady_clock:
//
//   DirectHost    as FTorch's C++ layer does: tensors over the host arrays' memory with
//                 the layout's strides (torch::from_blob, no copy), forward of a
//                 torch::jit::Module under a grad-mode guard (torch::AutoGradMode(false)
//                 by default, as FTorch's torch_jit_module_forward; c10::InferenceMode
//                 as a what-if), the result written into the tensor wrapping the host
//                 output (copy_), tensors released.
//   EmbeddedHost  as forpy does: numpy arrays over the host memory (a Py_buffer with the
//                 layout's strides made into a memoryview, then numpy.asarray, as forpy's
//                 ndarray_create_nocopy_helper), an argument tuple, the module's function
//                 looked up by name (a new name string and PyObject_GetAttr per call, as
//                 call_py_attribute) and called with PyObject_Call and a new empty keyword
//                 dict (call_py_object_nokwargs), references released.
//
// Each call() returns the phase durations in seconds: (whole, marshal_in, h2d, forward,
// d2h, marshal_out) for DirectHost; (whole, marshal_in, marshal_out) for EmbeddedHost,
// whose module times its own phases with couplescope's phase clock.
//
// What every host shares (host arrays, phase ranges, the batch loop) is in host_common.h;
// the AOTInductor host is in aoti_host.cpp, added to this module by register_aoti().

#include <torch/cuda.h>

#include "host_common.h"

using namespace couplescope_native;

namespace {

// FTorch's torch_from_blob (ctorch.cpp), which torch_tensor_from_array calls: a tensor
// handle allocated on the heap, made under AutoGradMode(false) from the host memory with
// the layout's strides, then `.to(device)` (a no-op on the CPU, a copy onto a GPU).
torch::Tensor* ftorch_from_blob(const HostArray& a, const torch::Device& device) {
  torch::AutoGradMode enable_grad(false);
  auto tensor = new torch::Tensor;
  *tensor = wrap(a).to(device);
  return tensor;
}

class DirectHost : public TorchHostBase<DirectHost> {
 public:
  DirectHost(std::string path, std::string device, std::string grad_mode, std::vector<Call> calls)
      : TorchHostBase(device, grad_mode, std::move(calls)), path_(std::move(path)) {}

  // torch::jit::load onto the device, then eval(): FTorch's torch_jit_load.
  void load() {
    try {
      module_ = torch::jit::load(path_, device_);
      module_.eval();
      loaded_ = true;
    } catch (const c10::Error& e) {
      rethrow_without_backtrace(e);
    }
  }

  bool ready() const { return loaded_; }

  // One forward call, as a Fortran code through FTorch makes it: torch_tensor_from_array
  // for every input (on the run's device) and for the output (on the host), then
  // torch_jit_module_forward (an IValue vector built from the input handles, forward under
  // the grad-mode guard, `std::move(*out) = result`, which is copy_ into the host output),
  // then torch_delete of every handle. Each phase is one of FTorch's calls, so that the
  // replica and the user's own FTorch (--host ftorch) compare phase by phase: marshal_in
  // is the input and output tensors' creation (on a GPU the inputs' copy to the device is
  // h2d), forward is torch_model_forward, the copy into the host output included (on a GPU
  // that copy is d2h, a phase of its own), marshal_out the deletions.
  bool run(const Call& c, double* phase, std::string& error) {
    const torch::Device host(torch::kCPU);
    sync();
    PhaseRange range(profiling_, "couplescope/marshal_in");
    auto t0 = Clock::now();
    std::vector<torch::Tensor*> in;
    in.reserve(c.inputs.size());
    if (!on_gpu_)
      for (const auto& a : c.inputs) in.push_back(ftorch_from_blob(a, device_));
    torch::Tensor* out = ftorch_from_blob(c.output, host);
    auto t1 = Clock::now();
    range.end();
    phase[0] += seconds(t0, t1);
    if (on_gpu_) {  // FTorch on a GPU: the inputs are made on the device (from_blob(...).to)
      sync();
      PhaseRange h2d(profiling_, "couplescope/h2d");
      t0 = Clock::now();
      for (const auto& a : c.inputs) in.push_back(ftorch_from_blob(a, device_));
      sync();
      phase[1] += seconds(t0, Clock::now());
    }
    auto release = [&]() {
      for (auto* t : in) delete t;
      delete out;
    };
    // torch_jit_module_forward: forward under the grad-mode guard and, on the CPU, the result
    // written into the tensor over the host output inside the same call (`std::move(*out) =
    // result`, a copy_), as FTorch does before it returns: the forward phase is that call.
    // A result of the wrong kind or shape is said after the clock (FTorch would stop with
    // ctorch_error); on a GPU the copy back is its own phase (d2h).
    sync();
    PhaseRange forward(profiling_, "couplescope/forward");
    t0 = Clock::now();
    torch::jit::IValue result;
    bool written = false, shape_ok = true;
    try {
      std::vector<torch::jit::IValue> inputs_vec;
      for (auto* t : in) inputs_vec.push_back(*t);
      if (inference_) {
        c10::InferenceMode guard(true);
        result = module_.forward(inputs_vec);
        if (!on_gpu_) written = write_result(result, out);
      } else {
        torch::AutoGradMode guard(false);
        result = module_.forward(inputs_vec);
        if (!on_gpu_) written = write_result(result, out);
      }
      if (written) {  // FTorch's model_out goes when its forward returns
        shape_ok = result.toTensor().sizes() == out->sizes();
        result = torch::jit::IValue();
      }
    } catch (...) {
      release();
      throw;
    }
    sync();
    t1 = Clock::now();
    forward.end();
    phase[2] += seconds(t0, t1);
    if (!written && !result.isTensor()) {
      error = "model returned " + result.tagKind() + ", host expects a tensor of shape " +
              shape_text(out->sizes());
      release();
      return false;
    }
    if (!shape_ok || (!written && (!on_gpu_ || result.toTensor().sizes() != out->sizes()))) {
      error = shape_ok ? "model returned shape " + shape_text(result.toTensor().sizes()) + ", host expects " +
                             shape_text(out->sizes())
                       : "model returned a tensor of another shape than the host's " + shape_text(out->sizes()) +
                             " (copy_ broadcast it)";
      release();
      return false;
    }
    // on a GPU the result copied back into the tensor over the host output (d2h, with the
    // deletions, as before: there is no marshal_out on a GPU); on the CPU torch_delete of
    // every handle (marshal_out)
    sync();
    PhaseRange out_range(profiling_, on_gpu_ ? "couplescope/d2h" : "couplescope/marshal_out");
    t0 = Clock::now();
    if (on_gpu_) {
      if (inference_) {
        c10::InferenceMode guard(true);
        std::move(*out) = result.toTensor();
      } else {
        torch::AutoGradMode guard(false);
        std::move(*out) = result.toTensor();
      }
      sync();
    }
    result = torch::jit::IValue();
    release();
    t1 = Clock::now();
    out_range.end();
    phase[on_gpu_ ? 3 : 4] += seconds(t0, t1);
    return true;
  }

  // `std::move(*out) = result` as FTorch writes it (copy_ into the host memory, which checks
  // the shapes itself); false when that fails (not a tensor, a shape copy_ cannot take).
  static bool write_result(const torch::jit::IValue& result, torch::Tensor* out) {
    try {
      std::move(*out) = result.toTensor();
      return true;
    } catch (const c10::Error&) {
      return false;
    }
  }

 private:
  std::string path_;
  bool loaded_ = false;
  torch::jit::Module module_;
};

// The Python buffer format character of a dtype (struct module codes).
const char* buffer_format(const std::string& dtype) {
  if (dtype == "float32") return "f";
  if (dtype == "float64") return "d";
  if (dtype == "float16") return "e";
  if (dtype == "int32") return "i";
  if (dtype == "int64") return "q";
  throw std::invalid_argument("native host: unsupported dtype " + dtype);
}

size_t item_size(const std::string& dtype) {
  if (dtype == "float16") return 2;
  if (dtype == "float32" || dtype == "int32") return 4;
  return 8;
}

// A host array described as a Py_buffer, kept alive as long as the host: memoryviews made
// from it point at its shape and strides.
struct BufferSpec {
  std::intptr_t address;
  std::vector<Py_ssize_t> shape;
  std::vector<Py_ssize_t> strides;  // bytes
  const char* format;
  Py_ssize_t itemsize;
  Py_ssize_t length;
};

BufferSpec buffer_spec(const HostArray& a) {
  BufferSpec b;
  b.address = a.address;
  b.format = buffer_format(a.dtype);
  b.itemsize = static_cast<Py_ssize_t>(item_size(a.dtype));
  b.length = b.itemsize;
  for (size_t i = 0; i < a.shape.size(); ++i) {
    b.shape.push_back(static_cast<Py_ssize_t>(a.shape[i]));
    b.strides.push_back(static_cast<Py_ssize_t>(a.strides[i]) * b.itemsize);
    b.length *= static_cast<Py_ssize_t>(a.shape[i]);
  }
  return b;
}

class EmbeddedHost {
 public:
  // `after` is called after each call of a batch, outside the timed region: the phase
  // clock's reset, which returns the phases the module timed during that call
  // With `returns_loss` (a training step: train(inputs, target)) the value the function
  // returns is read back as the step's loss: a float, or (done, loss) as pytorch-fortran's
  // ftn_pytorch_train returns (is_completed, loss); a true `done` ends the batch after its
  // step, as a Fortran caller stops calling train once it is told training is complete.
  EmbeddedHost(py::object module, std::string function, std::vector<Call> calls, py::object after,
               bool returns_loss)
      : module_(std::move(module)), function_(std::move(function)), after_(std::move(after)),
        returns_loss_(returns_loss) {
    asarray_ = py::module_::import("numpy").attr("asarray");  // forpy_initialize keeps it too
    for (const auto& c : calls) {
      std::vector<BufferSpec> ins;
      for (const auto& a : c.inputs) ins.push_back(buffer_spec(a));
      calls_.push_back({std::move(ins), buffer_spec(c.output)});
    }
  }

  // One iteration's calls. Returns (whole, marshal_in, marshal_out); a Python exception
  // raised by the function propagates unchanged.
  // With `profiling`, marshal_in and marshal_out are also profiler ranges (the module's
  // own phases are ranges through the phase clock).
  py::tuple call(bool profiling) {
    double phase[2] = {0, 0};
    std::string error;
    profiling_ = profiling;
    double whole = 0;
    try {
      whole = one(phase, error);
    } catch (...) {
      profiling_ = false;
      throw;
    }
    profiling_ = false;
    return py::make_tuple(whole, phase[0], phase[1]);
  }

  static constexpr int kPhases = 2;

  // After each call of a batch: what the module's phase clock timed, and a training step's
  // loss (the mean over the iteration's calls) and whether its train call said done.
  py::object after_call() {
    py::object phases = after_.is_none() ? py::object(py::dict()) : after_();
    if (returns_loss_) {
      py::dict extra(phases);
      last_loss_ = take_loss();
      extra["step_loss"] = last_loss_;
      last_done_ = said_done();
      if (last_done_) extra["step_done"] = true;
      return std::move(extra);
    }
    return phases;
  }

  // A training step whose loss is not finite ends the batch (as on the training host), and
  // so does one whose train call said training is complete.
  bool batch_ends() const { return returns_loss_ && (!std::isfinite(last_loss_) || last_done_); }

  // Whether a train call since the last look returned done = true, and forget it (the
  // python side's one-call path; a batch reads it through after_call()).
  bool said_done() {
    const bool done = done_;
    done_ = false;
    return done;
  }

  // The losses the calls since the last look returned, and forget them (the python side).
  py::list losses() {
    py::list out;
    for (double v : losses_) out.append(v);
    losses_.clear();
    return out;
  }

  // One iteration: the whole call's seconds; marshal_in and marshal_out accumulated into
  // `phase`. A Python exception from the function is thrown as py::error_already_set.
  double one(double* phase, std::string& /*error*/) {
    double& marshal_in = phase[0];
    double& marshal_out = phase[1];
    const auto start = Clock::now();
    for (const auto& c : calls_) {
      PhaseRange in_range(profiling_, "couplescope/marshal_in");
      auto t0 = Clock::now();
      PyObject* inputs = PyTuple_New(static_cast<Py_ssize_t>(c.inputs.size()));
      bool ok = inputs != nullptr;
      for (size_t i = 0; ok && i < c.inputs.size(); ++i) {
        PyObject* array = ndarray_nocopy(c.inputs[i]);
        ok = array != nullptr;
        if (ok) PyTuple_SET_ITEM(inputs, static_cast<Py_ssize_t>(i), array);  // steals
      }
      PyObject* output = ok ? ndarray_nocopy(c.output) : nullptr;
      PyObject* args = output ? PyTuple_Pack(2, inputs, output) : nullptr;
      auto t1 = Clock::now();
      in_range.end();
      marshal_in += seconds(t0, t1);
      // forpy's call_py: the name boxed into a string and looked up on every call
      // (call_py_attribute), an empty keyword dict made for it (call_py_object_nokwargs),
      // then PyObject_Call
      PyObject* result = nullptr;
      if (args) {
        PyObject* name = PyUnicode_FromString(function_.c_str());
        PyObject* fn = name ? PyObject_GetAttr(module_.ptr(), name) : nullptr;
        PyObject* kwargs = fn ? PyDict_New() : nullptr;
        if (kwargs) result = PyObject_Call(fn, args, kwargs);
        Py_XDECREF(kwargs);
        Py_XDECREF(fn);
        Py_XDECREF(name);
      }
      PhaseRange out_range(profiling_, "couplescope/marshal_out");
      t0 = Clock::now();
      bool bad_loss = false;
      if (returns_loss_ && result) {  // the loss, as a forpy caller unpacks the return value
        const bool pair = PyTuple_Check(result) && PyTuple_GET_SIZE(result) == 2;
        PyObject* item = pair ? PyTuple_GET_ITEM(result, 1) : result;
        const double value = PyFloat_AsDouble(item);
        bad_loss = value == -1.0 && PyErr_Occurred();
        if (!bad_loss) losses_.push_back(value);
        if (!bad_loss && pair) {  // done, as pytorch-fortran casts is_completed to a bool
          const int truth = PyObject_IsTrue(PyTuple_GET_ITEM(result, 0));
          bad_loss = truth < 0;
          if (truth > 0) done_ = true;
        }
      }
      Py_XDECREF(result);
      Py_XDECREF(args);
      Py_XDECREF(output);
      Py_XDECREF(inputs);
      marshal_out += seconds(t0, Clock::now());
      out_range.end();
      if (!result) throw py::error_already_set();
      if (bad_loss) {
        PyErr_Clear();
        throw py::type_error(function_ + " must return the loss (a float) or (done, loss)");
      }
    }
    return seconds(start, Clock::now());
  }

 private:
  // forpy's ndarray_create_nocopy: a Py_buffer over the memory, a memoryview of it, and
  // numpy.asarray of the memoryview (the array keeps the memoryview as its base).
  PyObject* ndarray_nocopy(const BufferSpec& b) {
    Py_buffer view{};
    view.buf = reinterpret_cast<void*>(b.address);
    view.obj = nullptr;
    view.len = b.length;
    view.itemsize = b.itemsize;
    view.readonly = 0;
    view.ndim = static_cast<int>(b.shape.size());
    view.format = const_cast<char*>(b.format);
    view.shape = const_cast<Py_ssize_t*>(b.shape.data());
    view.strides = const_cast<Py_ssize_t*>(b.strides.data());
    view.suboffsets = nullptr;
    PyObject* memory = PyMemoryView_FromBuffer(&view);
    if (!memory) return nullptr;
    PyObject* args = PyTuple_New(1);  // forpy: a 1-tuple, PyObject_Call(numpy.asarray, args)
    if (!args) {
      Py_DECREF(memory);
      return nullptr;
    }
    PyTuple_SET_ITEM(args, 0, memory);  // steals the reference
    PyObject* array = PyObject_Call(asarray_.ptr(), args, nullptr);
    Py_DECREF(args);
    return array;
  }

  struct BufferCall {
    std::vector<BufferSpec> inputs;
    BufferSpec output;
  };

  double take_loss() {
    double sum = 0;
    for (double v : losses_) sum += v;
    const double mean = losses_.empty() ? std::nan("") : sum / static_cast<double>(losses_.size());
    losses_.clear();
    return mean;
  }

  py::object module_;
  std::string function_;
  py::object after_;
  bool returns_loss_;
  double last_loss_ = 0;  // the last step's loss, as after_call() handed it back
  bool done_ = false;       // a train call said done since the last look
  bool last_done_ = false;  // the last step of a batch said done (it ends the batch)
  py::object asarray_;
  std::vector<BufferCall> calls_;
  std::vector<double> losses_;
  bool profiling_ = false;
};


}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "couplescope native host: FTorch-style direct and forpy-style embedded calls";
  py::class_<HostArray>(m, "HostArray")
      .def(py::init<std::intptr_t, std::vector<int64_t>, std::vector<int64_t>, std::string>());
  py::class_<Call>(m, "Call").def(py::init<std::vector<HostArray>, HostArray>());
  py::class_<OutputSlot>(m, "OutputSlot")
      .def(py::init<std::intptr_t, std::intptr_t, std::intptr_t, size_t>());
  py::class_<InputSlot>(m, "InputSlot").def(py::init<std::intptr_t, std::intptr_t, size_t>());
  py::class_<DirectHost>(m, "DirectHost")
      .def(py::init<std::string, std::string, std::string, std::vector<Call>>())
      .def("load", &DirectHost::load)
      .def("call", &DirectHost::call)
      .def("call_batch", &run_batch<DirectHost>);
  py::class_<EmbeddedHost>(m, "EmbeddedHost")
      .def(py::init<py::object, std::string, std::vector<Call>, py::object, bool>())
      .def("call", &EmbeddedHost::call)
      .def("losses", &EmbeddedHost::losses)
      .def("said_done", &EmbeddedHost::said_done)
      .def("call_batch", &run_batch<EmbeddedHost>);
  register_aoti(m);
  register_train(m);
  m.attr("ABI") = 2;
}
