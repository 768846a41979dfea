// What couplescope's native hosts share (host.cpp: DirectHost, EmbeddedHost; aoti_host.cpp:
// AotiHost): the host arrays as a host code describes them, tensors over their memory,
// the phase timing (std::chrono::steady_clock, profiler ranges only in profiled
// iterations) and the batch loop that makes several iterations' calls with no Python in
// between. In a named namespace, so the types are the same in every source file of the
// extension (pybind11 registers HostArray and Call once, in host.cpp, and AotiHost takes
// them too).

#pragma once

#include <ATen/record_function.h>
#include <torch/cuda.h>
#include <torch/script.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace couplescope_native {

namespace py = pybind11;
using Clock = std::chrono::steady_clock;

inline double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// A torch.profiler range named couplescope/<phase>, opened only in profiled iterations
// (the phase clock's record_function in Python does the same): timed iterations make no
// profiler call at all.
class PhaseRange {
 public:
  PhaseRange(bool on, const char* name) {
    if (!on) return;
    guard_.emplace(at::RecordScope::USER_SCOPE);
    if (guard_->isActive()) guard_->before(name);
  }
  void end() { guard_.reset(); }

 private:
  std::optional<at::RecordFunction> guard_;
};

// One host array as the host code knows it: address, shape and element strides.
struct HostArray {
  HostArray(std::intptr_t address, std::vector<int64_t> shape, std::vector<int64_t> strides,
            std::string dtype);
  std::intptr_t address;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  std::string dtype;
  torch::TensorOptions options;  // decided once, as a host code declares its arrays once
};

// One forward call per iteration step (cgdrag makes two).
struct Call {
  std::vector<HostArray> inputs;
  HostArray output;
};

inline at::ScalarType scalar_type(const std::string& dtype) {
  if (dtype == "float32") return at::kFloat;
  if (dtype == "float64") return at::kDouble;
  if (dtype == "float16") return at::kHalf;
  if (dtype == "int32") return at::kInt;
  if (dtype == "int64") return at::kLong;
  throw std::invalid_argument("native host: unsupported dtype " + dtype);
}

inline HostArray::HostArray(std::intptr_t address_, std::vector<int64_t> shape_,
                     std::vector<int64_t> strides_, std::string dtype_)
    : address(address_), shape(std::move(shape_)), strides(std::move(strides_)),
      dtype(std::move(dtype_)), options(torch::TensorOptions().dtype(scalar_type(dtype))) {}

inline torch::Tensor wrap(const HostArray& a) {
  return torch::from_blob(reinterpret_cast<void*>(a.address), a.shape, a.strides, a.options);
}

inline std::string shape_text(at::IntArrayRef shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

// The message of a libtorch error without its C++ backtrace.
[[noreturn]] inline void rethrow_without_backtrace(const c10::Error& e) {
  throw std::runtime_error(e.what_without_backtrace());
}

// What the engine does between two calls, done here so that no Python runs between the
// calls of a batch (Python work between calls evicts the caches a tight host loop keeps
// warm: on SimpleNet it doubled the call). Before each call every host output is filled
// with NaN (from a pattern the engine made), after it the output is copied into the
// iteration's slot of a snapshot buffer, both outside the timed region; the engine then
// checks every iteration's snapshot, so every call is still checked.
struct OutputSlot {
  std::intptr_t host;       // the host output array
  std::intptr_t nan;        // the same number of bytes of NaN
  std::intptr_t snapshots;  // count * bytes: one slot per iteration
  size_t bytes;
};

// A training batch's data: before iteration i the host array receives row i of a buffer the
// engine filled ahead (the step's inputs and targets, as the simulation writes them each
// time step), outside the timed region.
struct InputSlot {
  std::intptr_t host;     // the host array
  std::intptr_t source;   // count * bytes: one row per iteration
  size_t bytes;
};

// What the two libtorch hosts (DirectHost: TorchScript; AotiHost: an AOTInductor package)
// share: the run's device, grad mode and calls, and the iteration loop. `Host` supplies
// ready() (its model is loaded) and run(call, phase, error) (one forward call with its
// phases); everything else is here, once.
template <class Host>
class TorchHostBase {
 public:
  static constexpr int kPhases = 5;   // marshal_in, h2d, forward, d2h, marshal_out

  // One iteration's calls. Returns (whole, marshal_in, h2d, forward, d2h, marshal_out, error);
  // error is empty unless the model's output could not be written to the host array.
  // With `profiling`, each phase is also a profiler range (a profiled iteration).
  py::tuple call(bool profiling) {
    double phase[kPhases] = {0, 0, 0, 0, 0};
    std::string error;
    double whole = 0;
    profiling_ = profiling;
    try {
      whole = one(phase, error);
    } catch (const c10::Error& e) {
      profiling_ = false;
      rethrow_without_backtrace(e);
    }
    profiling_ = false;
    return py::make_tuple(whole, phase[0], phase[1], phase[2], phase[3], phase[4], error);
  }

  py::object after_call() { return py::none(); }

  // Whether the batch stops after this call (a training host: a step whose loss is not finite).
  bool batch_ends() const { return false; }

  // One iteration: the whole call's seconds; phases accumulated into `phase`.
  double one(double* phase, std::string& error) {
    Host& host = static_cast<Host&>(*this);
    if (!host.ready()) throw std::runtime_error("native host: call() before load()");
    const auto start = Clock::now();
    for (const auto& c : calls_) {
      if (!host.run(c, phase, error)) break;
    }
    return seconds(start, Clock::now());
  }

 protected:
  TorchHostBase(const std::string& device, const std::string& grad_mode, std::vector<Call> calls)
      : device_(device), inference_(grad_mode == "inference"), calls_(std::move(calls)),
        on_gpu_(device_.is_cuda()) {
    if (grad_mode != "no_grad" && grad_mode != "inference")
      throw std::invalid_argument("native host: unknown grad mode " + grad_mode);
  }

  void sync() {
    if (on_gpu_) torch::cuda::synchronize(device_.index() < 0 ? -1 : device_.index());
  }

  torch::Device device_;
  bool inference_;
  std::vector<Call> calls_;
  bool on_gpu_;
  bool profiling_ = false;
};

// Runs up to `count` iterations (each fed its row of `feeds` first), stopping after `budget` seconds (so a signal is handled
// soon), when the host's batch_ends() says so after a call, or at the first exception. Returns (rows, width, errors, failure,
// extras, failed_after): the finished iterations' rows (whole seconds, then the host's phases: `width` doubles each) as
// the bytes of the doubles, [(iteration, output error)] for the iterations whose output was not written, the failing
// iteration's message ("" when none failed), what the host's after_call() returned for each finished iteration, and how
// long the failing call ran before it threw. (The rows leave as bytes, not a Python float per value, and the errors
// only where there is one: made after the calls, they cost the engine more than a microsecond model's call.)
template <class Host>
py::tuple run_batch(Host& host, int count, double budget, const std::vector<OutputSlot>& slots,
                    const std::vector<InputSlot>& feeds) {
  constexpr int width = Host::kPhases + 1;
  std::vector<double> flat(static_cast<size_t>(count) * width, 0.0);  // allocated before the calls
  std::vector<std::string> errors;
  std::string failure;
  py::list extras;
  errors.reserve(count);
  int done = 0;
  double failed_after = 0;  // how long the failing call ran before it threw
  const auto begin = Clock::now();
  for (int i = 0; i < count; ++i) {
    for (const auto& s : slots)
      std::memcpy(reinterpret_cast<void*>(s.host), reinterpret_cast<const void*>(s.nan), s.bytes);
    for (const auto& f : feeds)
      std::memcpy(reinterpret_cast<void*>(f.host),
                  reinterpret_cast<const char*>(f.source) + static_cast<size_t>(i) * f.bytes, f.bytes);
    double* row = flat.data() + static_cast<size_t>(i) * width;
    std::string error;
    const auto call_start = Clock::now();
    try {
      row[0] = host.one(row + 1, error);
    } catch (const c10::Error& e) {
      failed_after = seconds(call_start, Clock::now());
      failure = e.what_without_backtrace();
      break;
    } catch (py::error_already_set& e) {
      failed_after = seconds(call_start, Clock::now());
      if (e.matches(PyExc_KeyboardInterrupt) || e.matches(PyExc_SystemExit)) throw;
      failure = std::string(py::str(e.type().attr("__name__"))) + ": " + std::string(py::str(e.value()));
      break;
    } catch (const std::exception& e) {
      failed_after = seconds(call_start, Clock::now());
      failure = e.what();
      break;
    }
    for (const auto& s : slots)
      std::memcpy(reinterpret_cast<char*>(s.snapshots) + static_cast<size_t>(i) * s.bytes,
                  reinterpret_cast<const void*>(s.host), s.bytes);
    errors.push_back(std::move(error));
    extras.append(host.after_call());
    done = i + 1;
    if (seconds(begin, Clock::now()) > budget || host.batch_ends()) break;
  }
  py::bytes rows(reinterpret_cast<const char*>(flat.data()), static_cast<size_t>(done) * width * sizeof(double));
  py::list output_errors;
  for (int i = 0; i < done; ++i)
    if (!errors[i].empty()) output_errors.append(py::make_tuple(i, errors[i]));
  return py::make_tuple(rows, width, output_errors, failure, extras, failed_after);
}

// Adds the AOTInductor host (aoti_host.cpp) to the extension module.
void register_aoti(py::module_& m);

// Adds the training host (train_host.cpp) to the extension module.
void register_train(py::module_& m);

}  // namespace couplescope_native
