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
//                 ndarray_create_nocopy), an argument tuple, the module's function looked
//                 up by name and called with PyObject_Call, references released.
//
// Each call() returns the phase durations in seconds: (whole, marshal_in, h2d, forward,
// d2h, marshal_out) for DirectHost; (whole, marshal_in, marshal_out) for EmbeddedHost,
// whose module times its own phases with couplescope's phase clock.

#include <torch/script.h>
#include <torch/cuda.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace py = pybind11;
using Clock = std::chrono::steady_clock;

namespace {

double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// One host array as the host code knows it: address, shape and element strides.
struct HostArray {
  std::intptr_t address;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  std::string dtype;
};

// One forward call per iteration step (cgdrag makes two).
struct Call {
  std::vector<HostArray> inputs;
  HostArray output;
};

at::ScalarType scalar_type(const std::string& dtype) {
  if (dtype == "float32") return at::kFloat;
  if (dtype == "float64") return at::kDouble;
  if (dtype == "float16") return at::kHalf;
  if (dtype == "int32") return at::kInt;
  if (dtype == "int64") return at::kLong;
  throw std::invalid_argument("native host: unsupported dtype " + dtype);
}

torch::Tensor wrap(const HostArray& a) {
  return torch::from_blob(reinterpret_cast<void*>(a.address), a.shape, a.strides,
                          torch::TensorOptions().dtype(scalar_type(a.dtype)));
}

std::string shape_text(at::IntArrayRef shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

// The message of a libtorch error without its C++ backtrace.
[[noreturn]] void rethrow_without_backtrace(const c10::Error& e) {
  throw std::runtime_error(e.what_without_backtrace());
}

class DirectHost {
 public:
  DirectHost(std::string path, std::string device, std::string grad_mode, std::vector<Call> calls)
      : path_(std::move(path)), device_(device), grad_mode_(std::move(grad_mode)),
        calls_(std::move(calls)), on_gpu_(device_.is_cuda()) {
    if (grad_mode_ != "no_grad" && grad_mode_ != "inference")
      throw std::invalid_argument("native host: unknown grad mode " + grad_mode_);
  }

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

  // One iteration's calls. Returns (whole, marshal_in, h2d, forward, d2h, marshal_out, error);
  // error is empty unless the model's output could not be written to the host array.
  py::tuple call() {
    if (!loaded_) throw std::runtime_error("native host: call() before load()");
    double phase[5] = {0, 0, 0, 0, 0};
    std::string error;
    const auto start = Clock::now();
    try {
      for (const auto& c : calls_) {
        if (!run(c, phase, error)) break;
      }
    } catch (const c10::Error& e) {
      rethrow_without_backtrace(e);
    }
    const double whole = seconds(start, Clock::now());
    return py::make_tuple(whole, phase[0], phase[1], phase[2], phase[3], phase[4], error);
  }

 private:
  void sync() {
    if (on_gpu_) torch::cuda::synchronize(device_.index() < 0 ? -1 : device_.index());
  }

  bool run(const Call& c, double* phase, std::string& error) {
    // marshal_in: torch_tensor_from_array for every input and for the output
    sync();
    auto t0 = Clock::now();
    std::vector<torch::jit::IValue> inputs;
    inputs.reserve(c.inputs.size());
    for (const auto& a : c.inputs) inputs.emplace_back(wrap(a));
    torch::Tensor host_out = wrap(c.output);
    auto t1 = Clock::now();
    phase[0] += seconds(t0, t1);
    if (on_gpu_) {  // FTorch on a GPU: the host code moves its inputs to the device
      sync();
      t0 = Clock::now();
      for (auto& v : inputs) v = v.toTensor().to(device_);
      sync();
      phase[1] += seconds(t0, Clock::now());
    }
    // forward under the grad-mode guard, as torch_jit_module_forward
    sync();
    t0 = Clock::now();
    torch::jit::IValue result;
    if (grad_mode_ == "inference") {
      c10::InferenceMode guard(true);
      result = module_.forward(inputs);
    } else {
      torch::AutoGradMode guard(false);
      result = module_.forward(inputs);
    }
    sync();
    t1 = Clock::now();
    phase[2] += seconds(t0, t1);
    if (!result.isTensor()) {
      error = "model returned " + result.tagKind() + ", host expects a tensor of shape " +
              shape_text(host_out.sizes());
      return false;
    }
    const torch::Tensor out = result.toTensor();
    if (out.sizes() != host_out.sizes()) {
      error = "model returned shape " + shape_text(out.sizes()) + ", host expects " +
              shape_text(host_out.sizes());
      return false;
    }
    // the result written into the tensor over the host output (d2h on a GPU), then the
    // tensors are released when they go out of scope
    sync();
    t0 = Clock::now();
    host_out.copy_(out);
    sync();
    inputs.clear();
    host_out = torch::Tensor();
    result = torch::jit::IValue();
    t1 = Clock::now();
    phase[on_gpu_ ? 3 : 4] += seconds(t0, t1);
    return true;
  }

  std::string path_;
  torch::Device device_;
  std::string grad_mode_;
  std::vector<Call> calls_;
  bool on_gpu_;
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
  EmbeddedHost(py::object module, std::string function, std::vector<Call> calls)
      : module_(std::move(module)), function_(std::move(function)) {
    asarray_ = py::module_::import("numpy").attr("asarray");  // forpy_initialize keeps it too
    for (const auto& c : calls) {
      std::vector<BufferSpec> ins;
      for (const auto& a : c.inputs) ins.push_back(buffer_spec(a));
      calls_.push_back({std::move(ins), buffer_spec(c.output)});
    }
  }

  // One iteration's calls. Returns (whole, marshal_in, marshal_out); a Python exception
  // raised by the function propagates unchanged.
  py::tuple call() {
    double marshal_in = 0, marshal_out = 0;
    const auto start = Clock::now();
    for (const auto& c : calls_) {
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
      marshal_in += seconds(t0, t1);
      PyObject* result = nullptr;
      if (args) {
        PyObject* fn = PyObject_GetAttrString(module_.ptr(), function_.c_str());  // by name
        if (fn) {
          result = PyObject_Call(fn, args, nullptr);
          Py_DECREF(fn);
        }
      }
      t0 = Clock::now();
      Py_XDECREF(result);
      Py_XDECREF(args);
      Py_XDECREF(output);
      Py_XDECREF(inputs);
      marshal_out += seconds(t0, Clock::now());
      if (!result) throw py::error_already_set();
    }
    const double whole = seconds(start, Clock::now());
    return py::make_tuple(whole, marshal_in, marshal_out);
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
    PyObject* array = PyObject_CallOneArg(asarray_.ptr(), memory);
    Py_DECREF(memory);
    return array;
  }

  struct BufferCall {
    std::vector<BufferSpec> inputs;
    BufferSpec output;
  };

  py::object module_;
  std::string function_;
  py::object asarray_;
  std::vector<BufferCall> calls_;
};

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "couplescope native host: FTorch-style direct and forpy-style embedded calls";
  py::class_<HostArray>(m, "HostArray")
      .def(py::init<std::intptr_t, std::vector<int64_t>, std::vector<int64_t>, std::string>());
  py::class_<Call>(m, "Call").def(py::init<std::vector<HostArray>, HostArray>());
  py::class_<DirectHost>(m, "DirectHost")
      .def(py::init<std::string, std::string, std::string, std::vector<Call>>())
      .def("load", &DirectHost::load)
      .def("call", &DirectHost::call);
  py::class_<EmbeddedHost>(m, "EmbeddedHost")
      .def(py::init<py::object, std::string, std::vector<Call>>())
      .def("call", &EmbeddedHost::call);
  m.attr("ABI") = 1;
}
