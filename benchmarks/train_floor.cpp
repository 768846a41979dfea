// The floor of an online-training step: a plain C++ libtorch loop training a TorchScript
// model on FTorch's example 11 task (new random input every step, the target the input
// shifted by one place, SGD), with nothing around the step but a steady_clock.
// benchmarks/train_floor.py builds and runs it beside couplescope's native training host.
//
//   train_floor MODEL.pt STEPS WARMUP MODE [--phases]
//   MODE: plain | plain-mse | ftorch | ftorch-mse | pytorch-fortran
//
// Set-up, once: tensors over the host's input and target arrays (from_blob, no copy; the
// loop writes new data into the arrays, outside the clock, and the tensors see it), the
// model loaded under AutoGradMode(false) and put in train mode, its parameters into
// torch::optim::SGD(lr 0.05, no momentum). A step, timed as a whole: zero_grad, forward
// under AutoGradMode(true), the mean squared error, backward, optimizer step. MODE picks how
// the loss is made:
//
//   plain   loss = (output - target).pow(2).mean() on stack tensors: what a C++ programmer
//           writes with operators (torch::nn::functional::mse_loss, one fused call, is
//           cheaper still; FTorch's torch_loss_mse makes that call: docs/training.md)
//   ftorch  the loss as FTorch's example 11 makes it through FTorch's API (example 11's
//           `torch_tensor_from_array(loss, loss_data)` then
//           `torch_tensor_mean(loss, (out - target) ** 2)`): the output a heap handle
//           rebound to the forward's result; the previous step's loss handle deleted and a
//           new one made over a one-element loss buffer (from_blob(...).to(kCPU)); each
//           operator's result first made with torch::empty (requires_grad as its operand)
//           and then rebound to the operation's result, both deleted at the end of the
//           statement; the mean copied into the loss buffer (`std::move(*loss) = mean`,
//           copy_); backward with an undefined gradient and retain_graph false
//   plain-mse  as plain, with loss = torch::nn::functional::mse_loss(output, target): one
//           fused call on stack tensors
//   ftorch-mse  as ftorch, with the loss made by FTorch's torch_loss_mse: the loss handle
//           remade over the loss buffer, then `std::move(*loss) = mse_loss(*out, target)`
//   pytorch-fortran  as pytorch-fortran's torch_module%train makes its step (its
//           torch_module_train_cpp): a stack output, `loss_tensor = mse_loss(prediction,
//           target)`, `loss_tensor.backward()`, step, and the loss read with item<float>()
//           inside the clock, as its train call returns it
//
// couplescope's --train-call ftorch-operators, ftorch-mse and pytorch-fortran make the
// last three, call for call.
//
// The loss is read after the clock stops. With --phases, the clock is also read between the
// phases (five more reads a step) and the per-phase medians are printed; without it, only
// the whole step is timed.
//
// Prints, after the loop:
//   "median_us <whole-step median> n <timed steps> mode <mode> final_loss <loss> result PASSED|FAILED"
// and with --phases a second line
//   "phases_us zero_grad <m> forward <m> loss <m> backward <m> step <m>"
// where result is example 11's check: input 1..5 gives 5,1,2,3,4 within rtol 1e-3.

#include <ATen/Parallel.h>
#include <torch/nn/functional/loss.h>
#include <torch/optim.h>
#include <torch/script.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kN = 5;
constexpr int kPhases = 5;  // zero_grad, forward, loss, backward, step
const char* const kPhaseNames[kPhases] = {"zero_grad", "forward", "loss", "backward", "step"};
const char* const kUsage = "usage: train_floor MODEL.pt STEPS WARMUP plain|plain-mse|ftorch|ftorch-mse|pytorch-fortran [--phases]\n";

double us(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

// FTorch's torch_tensor_from_array: a heap handle over host memory, requires_grad false.
torch::Tensor* from_array(float* data, int64_t n) {
  torch::AutoGradMode no_grad(false);
  auto* t = new torch::Tensor;
  *t = torch::from_blob(data, {n}, {1}, torch::TensorOptions().dtype(torch::kFloat32).requires_grad(false))
           .to(torch::Device(torch::kCPU));
  return t;
}

// An FTorch overloaded operator's result before the operation: torch_tensor_empty shaped,
// typed and placed as the first operand, requires_grad as it.
torch::Tensor* operator_result(const torch::Tensor& like) {
  torch::AutoGradMode enable_grad(true);
  auto* t = new torch::Tensor;
  *t = torch::empty(like.sizes(), torch::TensorOptions()
                                      .dtype(like.dtype())
                                      .device(like.device())
                                      .requires_grad(like.requires_grad()));
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5 || argc > 6) {
    std::fprintf(stderr, "%s", kUsage);
    return 2;
  }
  const int steps = std::atoi(argv[2]);
  const int warmup = std::atoi(argv[3]);
  const std::string mode = argv[4];
  const bool phased = argc == 6 && std::strcmp(argv[5], "--phases") == 0;
  const bool known = mode == "plain" || mode == "plain-mse" || mode == "ftorch" || mode == "ftorch-mse" ||
                     mode == "pytorch-fortran";
  if (steps < 1 || warmup < 0 || !known || (argc == 6 && !phased)) {
    std::fprintf(stderr, "%s", kUsage);
    return 2;
  }
  const bool ftorch = mode == "ftorch" || mode == "ftorch-mse";  // FTorch's handles
  const bool ftorch_mse = mode == "ftorch-mse";
  const bool pytorch_fortran = mode == "pytorch-fortran";
  const bool plain_mse = mode == "plain-mse" || pytorch_fortran;  // one fused call on stack tensors
  namespace F = torch::nn::functional;
  at::set_num_threads(1);

  // the host's arrays, and tensors over them made once
  float in[kN] = {0}, target[kN] = {0}, loss_data[1] = {0};
  torch::Tensor input = torch::from_blob(in, {kN}, {1}, torch::kFloat32);
  torch::Tensor target_t = torch::from_blob(target, {kN}, {1}, torch::kFloat32);

  torch::jit::Module module;
  {
    torch::AutoGradMode no_grad(false);
    module = torch::jit::load(argv[1], torch::Device(torch::kCPU));
  }
  module.train();
  std::vector<torch::Tensor> parameters;
  for (const auto& p : module.parameters()) parameters.push_back(p);
  torch::optim::SGD optimizer(parameters, torch::optim::SGDOptions(0.05).momentum(0).dampening(0)
                                              .weight_decay(0).nesterov(false));

  auto* out_handle = new torch::Tensor;  // ftorch: the output handle, rebound by each forward
  torch::Tensor* loss_handle = nullptr;  // ftorch: remade over loss_data every step
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  const int shift[kN] = {4, 0, 1, 2, 3};

  std::vector<double> whole;
  std::vector<std::vector<double>> phase(kPhases);
  whole.reserve(steps);
  for (auto& p : phase) p.reserve(steps);
  double last_loss = 0;
  for (int it = 0; it < warmup + steps; ++it) {
    for (int i = 0; i < kN; ++i) in[i] = uniform(rng);  // the host writes its arrays
    for (int i = 0; i < kN; ++i) target[i] = in[shift[i]];
    Clock::time_point t[kPhases + 1];
    torch::Tensor loss;  // plain
    t[0] = Clock::now();
    optimizer.zero_grad();
    if (phased) t[1] = Clock::now();
    if (ftorch) {
      {
        torch::AutoGradMode enable_grad(true);
        std::vector<torch::jit::IValue> inputs{input};
        *out_handle = module.forward(inputs).toTensor();
      }
      if (phased) t[2] = Clock::now();
      delete loss_handle;
      loss_handle = from_array(loss_data, 1);
      if (ftorch_mse) {
        torch::AutoGradMode enable_grad(true);
        std::move(*loss_handle) = F::mse_loss(*out_handle, target_t);
      } else {
        torch::AutoGradMode enable_grad(true);
        torch::Tensor* difference = operator_result(*out_handle);
        *difference = *out_handle - target_t;
        torch::Tensor* squared = operator_result(*difference);
        *squared = torch::pow(*difference, 2);
        std::move(*loss_handle) = squared->mean();
        delete squared;
        delete difference;
      }
      if (phased) t[3] = Clock::now();
      loss_handle->backward({}, false);
    } else {
      torch::Tensor output;
      {
        torch::AutoGradMode enable_grad(true);
        std::vector<torch::jit::IValue> inputs{input};
        output = module.forward(inputs).toTensor();
      }
      if (phased) t[2] = Clock::now();
      loss = plain_mse ? F::mse_loss(output, target_t) : (output - target_t).pow(2).mean();
      if (phased) t[3] = Clock::now();
      loss.backward();
    }
    if (phased) t[4] = Clock::now();
    optimizer.step();
    if (pytorch_fortran) {  // inside its train call: *loss = loss_tensor.item<float>()
      last_loss = loss.item<float>();
      loss = torch::Tensor();
    }
    t[kPhases] = Clock::now();
    if (!pytorch_fortran) last_loss = ftorch ? loss_data[0] : loss.item<float>();  // read after the clock
    if (it < warmup) continue;
    whole.push_back(us(t[0], t[kPhases]));
    if (phased)
      for (int p = 0; p < kPhases; ++p) phase[p].push_back(us(t[p], t[p + 1]));
  }

  // example 11's final check: 1..5 must give 5,1,2,3,4 within rtol 1e-3
  bool passed = true;
  {
    torch::NoGradGuard no_grad;
    for (int i = 0; i < kN; ++i) in[i] = static_cast<float>(i + 1);
    std::vector<torch::jit::IValue> inputs{input};
    torch::Tensor probe = module.forward(inputs).toTensor().contiguous();
    for (int i = 0; i < kN; ++i) {
      const float want = in[shift[i]];
      passed = passed && std::fabs(probe.data_ptr<float>()[i] - want) <= 1e-3f * std::fabs(want);
    }
  }
  delete loss_handle;
  delete out_handle;

  std::printf("median_us %.3f n %zu mode %s final_loss %.4e result %s\n", median(whole),
              whole.size(), mode.c_str(), last_loss, passed ? "PASSED" : "FAILED");
  if (phased) {
    std::printf("phases_us");
    for (int p = 0; p < kPhases; ++p) std::printf(" %s %.3f", kPhaseNames[p], median(phase[p]));
    std::printf("\n");
  }
  return 0;
}
