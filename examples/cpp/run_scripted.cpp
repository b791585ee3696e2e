// Runs a TorchScript model that calls torch.ops.convx.* from C++, without Python.
//
// This program names no convx symbol and includes no convx header: the operators are there
// because the program links libconvx.so (convx::convx links with --no-as-needed, so the library
// stays loaded and its static initialisers register the operators).
//
//   convx_run_scripted MODEL [--shape N,C,H,W] [--repeat K] [--rtol R] [--atol A]
//
// MODEL is a torch.jit.save'd module. Saved by examples/cpp/make_model.py (save_bundle), it
// carries the buffers example_input and expected_output: the program runs forward on the first
// and compares with the second (exit status 1 on a mismatch). --shape runs a random input of
// that shape instead; --repeat K reports the median time of K forward calls.
#include <torch/script.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::vector<int64_t> parse_shape(const std::string& text) {
  std::vector<int64_t> shape;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) shape.push_back(std::stoll(item));
  return shape;
}

double median_ms(torch::jit::Module& model, const at::Tensor& input, int repeat) {
  std::vector<double> ms;
  for (int i = 0; i < repeat; ++i) {
    auto start = std::chrono::steady_clock::now();
    model.forward({input});
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
  return ms[ms.size() / 2];
}

int usage(const char* argv0) {
  std::cerr << "usage: " << argv0
            << " MODEL [--shape N,C,H,W] [--repeat K] [--rtol R] [--atol A]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc % 2 != 0) return usage(argv[0]);  // MODEL, then flag-value pairs
  std::string path = argv[1];
  std::vector<int64_t> shape;
  int repeat = 0;
  double rtol = 1e-4, atol = 1e-5;
  for (int i = 2; i < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--shape") shape = parse_shape(value);
    else if (flag == "--repeat") repeat = std::stoi(value);
    else if (flag == "--rtol") rtol = std::stod(value);
    else if (flag == "--atol") atol = std::stod(value);
    else return usage(argv[0]);
  }

  try {
    torch::jit::Module model = torch::jit::load(path);
    model.eval();
    c10::InferenceMode no_autograd;

    const bool bundled = shape.empty();
    if (bundled && !model.hasattr("example_input")) {
      std::cerr << path << " has no example_input buffer: pass --shape\n";
      return 2;
    }
    at::Tensor input = bundled ? model.attr("example_input").toTensor() : at::randn(shape);
    at::Tensor output = model.forward({input}).toTensor();
    std::cout << "input " << input.sizes() << " -> output " << output.sizes() << "\n";
    if (repeat > 0) {
      std::cout << "median of " << repeat << " runs: " << median_ms(model, input, repeat)
                << " ms\n";
    }

    if (bundled && model.hasattr("expected_output")) {
      at::Tensor expected = model.attr("expected_output").toTensor();
      const bool match = output.sizes() == expected.sizes() &&
                         at::allclose(output, expected, rtol, atol);
      const double diff =
          output.sizes() == expected.sizes() ? (output - expected).abs().max().item<double>() : -1;
      std::cout << (match ? "match" : "MISMATCH") << " with expected_output (max |difference| "
                << diff << ", rtol " << rtol << ", atol " << atol << ")\n";
      return match ? EXIT_SUCCESS : EXIT_FAILURE;
    }
  } catch (const c10::Error& e) {
    // "Unknown builtin op: convx::..." here means libconvx.so was not linked into the program.
    std::cerr << "error: " << e.what_without_backtrace() << "\n";
    return 2;
  }
  return EXIT_SUCCESS;
}
