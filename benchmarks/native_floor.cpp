// The floor any host can reach: a plain C++ loop doing exactly what FTorch's API does per
// call (from_blob over host memory with Fortran strides -> forward under
// AutoGradMode(false) -> copy_ into the tensor over the host output -> release), with
// nothing else. benchmarks/native_floor.py builds and runs it beside couplescope.
//
//   native_floor MODEL.pt ITERATIONS WARMUP DIM [DIM ...]   (one float32 input, output = input shape)
// prints one line: "median_us <median per-call microseconds> n <timed calls>"

#include <torch/script.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: native_floor MODEL.pt ITERATIONS WARMUP DIM [DIM ...]\n");
    return 2;
  }
  const int iterations = std::atoi(argv[2]);
  const int warmup = std::atoi(argv[3]);
  std::vector<int64_t> shape, strides;
  int64_t count = 1;
  for (int i = 4; i < argc; ++i) {
    strides.push_back(count);  // Fortran order: the first index varies fastest
    shape.push_back(std::atoll(argv[i]));
    count *= shape.back();
  }
  std::vector<float> in(count), out(count);
  for (int64_t i = 0; i < count; ++i) in[i] = static_cast<float>(i % 97) / 97.0f;
  torch::jit::Module module = torch::jit::load(argv[1]);
  module.eval();
  std::vector<double> times;
  times.reserve(iterations);
  for (int it = 0; it < warmup + iterations; ++it) {
    const auto t0 = std::chrono::steady_clock::now();
    {
      std::vector<torch::jit::IValue> inputs;
      inputs.emplace_back(torch::from_blob(in.data(), shape, strides, torch::kFloat32));
      torch::Tensor host_out = torch::from_blob(out.data(), shape, strides, torch::kFloat32);
      torch::jit::IValue result;
      {
        torch::AutoGradMode guard(false);
        result = module.forward(inputs);
      }
      host_out.copy_(result.toTensor());
    }
    const auto t1 = std::chrono::steady_clock::now();
    if (it >= warmup) times.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
  std::printf("median_us %.3f n %zu\n", times[times.size() / 2], times.size());
  return 0;
}
