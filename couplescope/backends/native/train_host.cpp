// couplescope's native training host: an online-training step as a Fortran code makes it
// through FTorch, call for call (FTorch's examples/11_Training and its ctorch.cpp):
//
//   set-up   tensors over the host's input and target arrays, made once with from_blob
//            (no copy, the layout's strides): the host writes new data into its arrays each
//            step and the tensors see it (FTorch's torch_tensor_from_array before the loop);
//            torch::jit::load under AutoGradMode(false), then train() (torch_model_load with
//            is_training); the module's parameters into libtorch's C++ optimizer,
//            torch::optim::SGD(lr, momentum 0, dampening 0, weight decay 0) or Adam
//            (torch_optim_SGD, torch_optim_Adam).
//   a step   zero_grad   optimizer.zero_grad() (libtorch's default: grads reset to undefined)
//            forward     AutoGradMode(true), a new vector<IValue> of the input handles,
//                        module.forward (get_method("forward") on every call), the output
//                        handle rebound to the result (torch_jit_module_forward with
//                        requires_grad: a shallow assignment that keeps grad_fn)
//            loss        the previous loss handle deleted and a new one made over the host's
//                        one-element loss buffer (torch_tensor_from_array(loss, loss_data));
//                        (out - target) and its ** 2 each made as FTorch's overloaded
//                        operators make them (torch::empty with requires_grad, then rebound to
//                        the result) and deleted at the end of the statement, as a Fortran
//                        compiler that finalizes function results does (gfortran 12 does not,
//                        and leaks 4.6 kB a step: docs/training.md); the mean copied into the
//                        loss buffer (torch_tensor_mean: `std::move(*loss) = mean`, copy_)
//                        --train-call ftorch-mse: FTorch's torch_loss_mse instead, the loss
//                        handle made as above, then one mse_loss (or l1_loss) call of
//                        torch::nn::functional copied into it (`std::move(*loss) = ...`), no
//                        operator temporaries. --train-call pytorch-fortran: its
//                        torch_module_train_cpp, no loss handle: `loss_tensor = mse_loss(...)`
//                        on a tensor of its own, `loss_tensor.backward()`, and after the
//                        step, still inside its train call, `*loss = loss_tensor.item<float>()`
//                        (timed in the step phase)
//            backward    loss.backward() with an undefined gradient (libtorch seeds ones)
//                        and retain_graph false (torch_tensor_backward)
//            allreduce   under MPI: the worker's gradient averaging (mpi4py), between backward
//                        and step, as a simulation's MPI_Allreduce would sit
//            step        optimizer.step() (torch_optim_step)
//   The loss is read from the loss buffer after the step, outside the timed phases and the
//   step's time, as example 11 reads loss_data to log it. Example 11 also copies the
//   gradient every step into a tensor made before its loop (torch_tensor_get_gradient into
//   weights_grad, from torch_tensor_empty) to print it every 100 steps; that is not part of
//   the step and is not made here.
//
// The step's time (the iteration's whole) runs from its first call to the end of
// optimizer.step(). The GIL, released before it and taken back after it, is outside it: a
// Fortran code holds no GIL (inside, the GIL and the loss read added 1.4 us to SimpleNet's
// 40 us step; benchmarks/train_floor.py compares the step with a plain C++ loop).
//
// On a GPU the input and target tensors are made on the device every step (h2d), since a
// device copy made once would not see the host's new data.
//
// call(profiling) returns (whole, marshal_in, h2d, zero_grad, forward, loss, backward,
// allreduce, step, error, loss value); call_batch (run_batch in host_common.h) runs steps
// back to back, each fed its row of data first, and after_call() hands each step's loss back.

#include "host_common.h"

#include <torch/csrc/utils/pybind.h>
#include <torch/nn/functional/loss.h>
#include <torch/optim.h>

#include <memory>
#include <sstream>

namespace couplescope_native {

namespace {

// --train-call: whose training step, call for call
enum class Form { kFtorchOperators, kFtorchMse, kPytorchFortran };

Form form_of(const std::string& train_call) {
  if (train_call == "ftorch-operators") return Form::kFtorchOperators;
  if (train_call == "ftorch-mse") return Form::kFtorchMse;
  if (train_call == "pytorch-fortran") return Form::kPytorchFortran;
  throw std::invalid_argument("native training host: unknown train call " + train_call);
}

class TrainHost {
 public:
  static constexpr int kPhases = 8;  // marshal_in, h2d, zero_grad, forward, loss, backward, allreduce, step

  TrainHost(std::string path, std::string device, std::string optimizer, double lr,
            std::string loss, std::string train_call, std::vector<Call> calls, py::object allreduce)
      : path_(std::move(path)), device_(device), optimizer_name_(std::move(optimizer)), lr_(lr),
        l1_(loss == "l1"), form_(form_of(train_call)), calls_(std::move(calls)),
        allreduce_(std::move(allreduce)), on_gpu_(device_.is_cuda()) {
    if (optimizer_name_ != "sgd" && optimizer_name_ != "adam")
      throw std::invalid_argument("native training host: unknown optimizer " + optimizer_name_);
    if (loss != "mse" && loss != "l1")
      throw std::invalid_argument("native training host: unknown loss " + loss);
  }

  ~TrainHost() {
    release_loss();
    release_host_tensors();
  }

  TrainHost(const TrainHost&) = delete;
  TrainHost& operator=(const TrainHost&) = delete;

  void load() {
    try {
      {
        torch::AutoGradMode no_grad(false);  // torch_jit_load
        module_ = torch::jit::load(path_, device_);
      }
      module_.train();                       // is_training=.true.
      parameters_.clear();
      for (const auto& p : module_.parameters()) parameters_.push_back(p);  // torch_model_parameters
      if (optimizer_name_ == "adam") {
        optimizer_ = std::make_unique<torch::optim::Adam>(parameters_, torch::optim::AdamOptions(lr_));
      } else {
        optimizer_ = std::make_unique<torch::optim::SGD>(
            parameters_,
            torch::optim::SGDOptions(lr_).momentum(0).dampening(0).weight_decay(0).nesterov(false));
      }
      make_host_tensors();
    } catch (const c10::Error& e) {
      rethrow_without_backtrace(e);
    }
  }

  // One iteration: a training step per call. Returns (whole, the 8 phases, error, loss).
  py::tuple call(bool profiling) {
    double phase[kPhases] = {0, 0, 0, 0, 0, 0, 0, 0};
    std::string error;
    double whole = 0;
    profiling_ = profiling;
    try {
      whole = one(phase, error);
    } catch (const c10::Error& e) {
      profiling_ = false;
      rethrow_without_backtrace(e);
    } catch (...) {
      profiling_ = false;
      throw;
    }
    profiling_ = false;
    return py::make_tuple(whole, phase[0], phase[1], phase[2], phase[3], phase[4], phase[5],
                          phase[6], phase[7], error, take_loss());
  }

  // The optimizer's state, serialized in memory, and put back: the profiler's operator
  // probe (couplescope/worker/operator_probe.py) undoes its step with them, since Adam's
  // step count is a C++ integer that no dispatch mode sees written.
  py::bytes optimizer_state() {
    if (!optimizer_) throw std::runtime_error("native training host: optimizer_state() before load()");
    std::ostringstream out;
    torch::serialize::OutputArchive archive;
    optimizer_->save(archive);
    archive.save_to(out);
    return py::bytes(out.str());
  }

  void set_optimizer_state(const std::string& state) {
    if (!optimizer_) throw std::runtime_error("native training host: set_optimizer_state() before load()");
    std::istringstream in(state);
    torch::serialize::InputArchive archive;
    archive.load_from(in, device_);
    optimizer_->load(archive);
  }

  // The step's loss for a batch (run_batch calls this after every step).
  py::object after_call() {
    py::dict extra;
    last_loss_ = take_loss();
    extra["step_loss"] = last_loss_;
    return std::move(extra);
  }

  // A step whose loss is not finite ends the batch: the engine fails the variant at that
  // step, and the steps after it would train on NaN weights for nothing.
  bool batch_ends() const { return !std::isfinite(last_loss_); }

  double one(double* phase, std::string& error) {
    if (!optimizer_) throw std::runtime_error("native training host: call() before load()");
    double whole = 0;  // the steps' own time: what a host does between them is not in it
    for (size_t c = 0; c < calls_.size(); ++c) {
      if (!step(c, phase, error, whole)) break;
    }
    return whole;
  }

  // [(name, weight, grad or None)] sharing the module's tensors: what the checks compare.
  py::list parameters() const {
    py::list out;
    for (const auto& item : module_.named_parameters()) {
      py::object grad = item.value.grad().defined() ? py::cast(item.value.grad()) : py::none();
      out.append(py::make_tuple(item.name, py::cast(item.value), grad));
    }
    return out;
  }

  void save(const std::string& path) {
    try {
      module_.save(path);  // torch_model_save
    } catch (const c10::Error& e) {
      rethrow_without_backtrace(e);
    }
  }

 private:
  struct StepTensors {
    std::vector<torch::Tensor*> inputs;  // handles over the host arrays (CPU), made once
    torch::Tensor* target = nullptr;
  };

  // FTorch's torch_tensor_from_array: a heap handle over host memory, made under
  // AutoGradMode(false), requires_grad false, then .to(device).
  static torch::Tensor* from_array(const HostArray& a, const torch::Device& device) {
    torch::AutoGradMode no_grad(false);
    auto* tensor = new torch::Tensor;
    *tensor = wrap(a).to(device);
    return tensor;
  }

  void make_host_tensors() {
    release_host_tensors();
    const torch::Device host(torch::kCPU);
    for (const auto& c : calls_) {
      StepTensors t;
      if (!on_gpu_) {
        for (const auto& a : c.inputs) t.inputs.push_back(from_array(a, host));
        t.target = from_array(c.output, host);
      }
      tensors_.push_back(std::move(t));
      outputs_.push_back(new torch::Tensor);
    }
    loss_buffer_ = torch::zeros({1}, calls_.empty() ? torch::TensorOptions() : calls_[0].output.options);
  }

  void release_host_tensors() {
    for (auto& t : tensors_) {
      for (auto* p : t.inputs) delete p;
      delete t.target;
    }
    tensors_.clear();
    for (auto* p : outputs_) delete p;
    outputs_.clear();
  }

  void release_loss() {
    delete loss_;
    loss_ = nullptr;
  }

  void sync() {
    if (on_gpu_) torch::cuda::synchronize(device_.index() < 0 ? -1 : device_.index());
  }

  // An FTorch overloaded operator's result: torch_tensor_empty of the first operand's
  // shape, dtype and device (requires_grad as it), then rebound to the operation's result.
  static torch::Tensor* operator_result(const torch::Tensor& like) {
    torch::AutoGradMode enable_grad(true);
    auto* out = new torch::Tensor;
    *out = torch::empty(like.sizes(), torch::TensorOptions()
                                          .dtype(like.dtype())
                                          .device(like.device())
                                          .requires_grad(like.requires_grad()));
    return out;
  }

  // One training step; adds its seconds to `elapsed`: from its first call (h2d on a GPU,
  // zero_grad on the CPU) to the end of the optimizer's step. The GIL's release before it
  // and re-acquisition after it, and the loss read after it, are the host's (a Fortran code
  // holds no GIL and reads its loss buffer when it likes), so they are outside that time.
  bool step(size_t c, double* phase, std::string& error, double& elapsed) {
    const Call& call = calls_[c];
    StepTensors& t = tensors_[c];
    std::vector<torch::Tensor*> inputs = t.inputs;
    torch::Tensor* target = t.target;
    std::vector<torch::Tensor*> device_copies;
    auto release = [&]() {
      for (auto* p : device_copies) delete p;
    };
    // a Fortran code holds no GIL, and libtorch's autograd engine refuses to run under it
    py::gil_scoped_release no_gil;
    sync();
    const auto start = Clock::now();
    auto done = [&]() { elapsed += seconds(start, Clock::now()); };
    if (on_gpu_) {  // a device copy of this step's data
      PhaseRange h2d(profiling_, "couplescope/h2d");
      auto t0 = Clock::now();
      for (const auto& a : call.inputs) device_copies.push_back(from_array(a, device_));
      device_copies.push_back(from_array(call.output, device_));
      sync();
      phase[1] += seconds(t0, Clock::now());
      inputs.assign(device_copies.begin(), device_copies.end() - 1);
      target = device_copies.back();
    }
    try {
      // zero_grad
      sync();
      PhaseRange zero(profiling_, "couplescope/zero_grad");
      // a phase starts where the one before it ended (one clock read fewer per phase),
      // except in profiled iterations, where a profiler range closes and opens in between
      auto t0 = on_gpu_ || profiling_ ? Clock::now() : start;
      optimizer_->zero_grad();
      sync();
      auto t1 = Clock::now();
      zero.end();
      phase[2] += seconds(t0, t1);

      // forward with grad: torch_jit_module_forward(..., requires_grad=.true.)
      PhaseRange fwd(profiling_, "couplescope/forward");
      t0 = profiling_ ? Clock::now() : t1;
      torch::jit::IValue result;
      {
        torch::AutoGradMode enable_grad(true);
        std::vector<torch::jit::IValue> inputs_vec;
        for (auto* in : inputs) inputs_vec.push_back(*in);
        result = module_.forward(inputs_vec);
        if (result.isTensor()) *outputs_[c] = result.toTensor();  // shallow: keeps grad_fn
      }
      sync();
      t1 = Clock::now();
      fwd.end();
      phase[3] += seconds(t0, t1);
      if (!result.isTensor()) {
        done();
        error = "model returned " + result.tagKind() + ", a training step needs a tensor";
        release();
        return false;
      }
      if (outputs_[c]->sizes() != target->sizes()) {
        done();
        error = "model returned shape " + shape_text(outputs_[c]->sizes()) + ", the target is " +
                shape_text(target->sizes());
        release();
        return false;
      }

      // loss: torch_tensor_from_array(loss, loss_data), then
      // torch_tensor_mean(loss, (out - target) ** 2), or torch_loss_mse(loss, out, target)
      PhaseRange loss_range(profiling_, "couplescope/loss");
      t0 = Clock::now();
      release_loss();
      if (form_ != Form::kPytorchFortran) loss_ = from_array_of(loss_buffer_);  // no handle there
      namespace F = torch::nn::functional;
      if (form_ == Form::kPytorchFortran) {
        torch::AutoGradMode enable_grad(true);
        own_loss_ = l1_ ? F::l1_loss(*outputs_[c], *target) : F::mse_loss(*outputs_[c], *target);
      } else if (form_ == Form::kFtorchMse) {
        torch::AutoGradMode enable_grad(true);
        std::move(*loss_) = l1_ ? F::l1_loss(*outputs_[c], *target) : F::mse_loss(*outputs_[c], *target);
      } else {
        torch::AutoGradMode enable_grad(true);  // the thread's default in a Fortran code
        torch::Tensor* difference = operator_result(*outputs_[c]);
        *difference = *outputs_[c] - *target;
        torch::Tensor* measure = operator_result(*difference);
        if (l1_) {
          *measure = difference->abs();
        } else {
          *measure = torch::pow(*difference, 2);
        }
        std::move(*loss_) = measure->mean();  // copy_ into the loss buffer: CopyBackwards
        delete measure;                       // the statement's temporaries, finalized
        delete difference;
      }
      sync();
      t1 = Clock::now();
      loss_range.end();
      phase[4] += seconds(t0, t1);

      // backward: undefined gradient (libtorch seeds ones_like), retain_graph false
      PhaseRange back(profiling_, "couplescope/backward");
      t0 = profiling_ ? Clock::now() : t1;
      if (form_ == Form::kPytorchFortran) {
        own_loss_.backward();  // loss_tensor.backward()
      } else {
        loss_->backward({}, false);
      }
      sync();
      t1 = Clock::now();
      back.end();
      phase[5] += seconds(t0, t1);

      if (!allreduce_.is_none()) {
        PhaseRange reduce(profiling_, "couplescope/allreduce");
        t0 = Clock::now();
        {
          py::gil_scoped_acquire gil;   // the worker's mpi4py averaging
          allreduce_();
        }
        sync();
        t1 = Clock::now();
        reduce.end();
        phase[6] += seconds(t0, t1);
      }

      PhaseRange opt(profiling_, "couplescope/step");
      t0 = profiling_ ? Clock::now() : t1;
      optimizer_->step();
      if (form_ == Form::kPytorchFortran) {  // in its train call: *loss = loss_tensor.item<float>(),
        read_loss_ = own_loss_.item<float>();  // then the call's tensors end with it
        own_loss_ = torch::Tensor();
      }
      sync();
      t1 = Clock::now();
      elapsed += seconds(start, t1);
      opt.end();
      phase[7] += seconds(t0, t1);
    } catch (...) {
      release();
      throw;
    }
    // read after the step, untimed (pytorch-fortran's train read it inside the call)
    loss_sum_ += form_ == Form::kPytorchFortran ? static_cast<double>(read_loss_)
                                                : loss_->detach().to(torch::kDouble).item<double>();
    ++losses_;
    release();
    return true;
  }

  torch::Tensor* from_array_of(const torch::Tensor& buffer) {
    torch::AutoGradMode no_grad(false);
    auto* tensor = new torch::Tensor;
    *tensor = torch::from_blob(buffer.data_ptr(), buffer.sizes(), buffer.strides(),
                               torch::TensorOptions().dtype(buffer.dtype()).requires_grad(false))
                  .to(device_);
    return tensor;
  }

  double take_loss() {
    const double mean = losses_ ? loss_sum_ / static_cast<double>(losses_) : std::nan("");
    loss_sum_ = 0;
    losses_ = 0;
    return mean;
  }

  double last_loss_ = 0;  // the last step's loss, as after_call() handed it back
  std::string path_;
  torch::Device device_;
  std::string optimizer_name_;
  double lr_;
  bool l1_;
  Form form_;                // --train-call: whose step
  torch::Tensor own_loss_;   // pytorch-fortran: the train call's own loss tensor
  float read_loss_ = 0;      // pytorch-fortran: the loss its train call reads and returns
  std::vector<Call> calls_;
  py::object allreduce_;
  bool on_gpu_;
  bool profiling_ = false;
  torch::jit::Module module_;
  std::vector<torch::Tensor> parameters_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::vector<StepTensors> tensors_;
  std::vector<torch::Tensor*> outputs_;
  torch::Tensor loss_buffer_;
  torch::Tensor* loss_ = nullptr;
  double loss_sum_ = 0;
  int losses_ = 0;
};

}  // namespace

void register_train(py::module_& m) {
  py::class_<TrainHost>(m, "TrainHost")
      .def(py::init<std::string, std::string, std::string, double, std::string, std::string,
                    std::vector<Call>, py::object>())
      .def("load", &TrainHost::load)
      .def("call", &TrainHost::call)
      .def("call_batch", &run_batch<TrainHost>)
      .def("parameters", &TrainHost::parameters)
      .def("optimizer_state", &TrainHost::optimizer_state)
      .def("set_optimizer_state", &TrainHost::set_optimizer_state)
      .def("save", &TrainHost::save);
}

}  // namespace couplescope_native
