// Runs an AOTInductor package (.pt2) of a model that calls torch.ops.convx.*, from C++.
//
// This program names no convx symbol and includes no convx header. The package calls the convx
// operators through the dispatcher, so they must be registered in this process: CMake links
// the program with convx::convx (--no-as-needed keeps libconvx.so, whose static initialisers
// register them). Before loading, the program checks the operators the package lists in its
// metadata (written by convx.export.aoti_package) and, when one is missing, prints the
// package's own instructions instead of the dispatcher's "Could not find schema".
//
//   convx_run_aoti PACKAGE.pt2 [--reference REF.pt] [--batch N] [--repeat K] [--rtol R] [--atol A]
//
// --reference: a torch.save'd dict {input_<i>, expected_<i>} (examples/aoti/export_model.py);
// every input runs and is compared with its expected output (exit status 1 on a mismatch).
// --batch N --repeat K: the median time of K runs on a random input of batch N (the other
// dimensions those of the reference's first input, or of --shape C,H,W).
// Exit status 3: the package cannot run here (operators missing, batch outside its range).
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

using Metadata = std::unordered_map<std::string, std::string>;

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, sep);) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

std::string get(const Metadata& meta, const std::string& key) {
  auto it = meta.find(key);
  return it == meta.end() ? std::string() : it->second;
}

// The convx operators the package calls that are not registered in this process.
std::vector<std::string> missing_operators(const Metadata& meta) {
  std::vector<std::string> missing;
  for (const auto& op : split(get(meta, "convx.ops"), ',')) {
    if (!c10::Dispatcher::singleton().findSchema({op, ""})) missing.push_back(op);
  }
  return missing;
}

// Empty when `batch` is inside the range the package was exported for; else what to do.
std::string batch_error(const Metadata& meta, int64_t batch) {
  const std::string low = get(meta, "convx.batch_min"), high = get(meta, "convx.batch_max");
  if ((low.empty() || batch >= std::stoll(low)) && (high.empty() || batch <= std::stoll(high)))
    return "";
  return "batch " + std::to_string(batch) + " is outside the range " + low + ".." + high +
         " this package was exported for. " + get(meta, "convx.batch_hint");
}

c10::Dict<c10::IValue, c10::IValue> load_reference(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  TORCH_CHECK(file, "cannot open the reference file ", path);
  std::vector<char> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  return torch::jit::pickle_load(bytes).toGenericDict();
}

void synchronize(const at::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize();
}

int usage(const char* argv0) {
  std::cerr << "usage: " << argv0
            << " PACKAGE.pt2 [--reference REF.pt] [--batch N] [--shape C,H,W] [--repeat K]"
               " [--rtol R] [--atol A]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc % 2 != 0) return usage(argv[0]);  // PACKAGE, then flag-value pairs
  const std::string package = argv[1];
  std::string reference;
  std::vector<int64_t> shape;
  int64_t batch = -1;
  int repeat = 0;
  double rtol = 1e-4, atol = 1e-4;
  for (int i = 2; i < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--reference") reference = value;
    else if (flag == "--batch") batch = std::stoll(value);
    else if (flag == "--shape") for (const auto& s : split(value, ',')) shape.push_back(std::stoll(s));
    else if (flag == "--repeat") repeat = std::stoi(value);
    else if (flag == "--rtol") rtol = std::stod(value);
    else if (flag == "--atol") atol = std::stod(value);
    else return usage(argv[0]);
  }

  try {
    const Metadata meta =
        torch::inductor::AOTIModelPackageLoader::load_metadata_from_package(package, "model");
    if (auto missing = missing_operators(meta); !missing.empty()) {
      std::cerr << "error: " << package << " needs " << missing.front() << " (and "
                << missing.size() - 1 << " more): " << get(meta, "convx.missing_library") << "\n";
      return 3;
    }
    const at::Device device(get(meta, "AOTI_DEVICE_KEY") == "cuda" ? at::kCUDA : at::kCPU);
    torch::inductor::AOTIModelPackageLoader loader(package);
    c10::InferenceMode no_autograd;
    // float32 means float32 here (convx computes in it): no TF32 in cuDNN / cuBLAS calls.
    at::globalContext().setAllowTF32CuDNN(false);
    at::globalContext().setAllowTF32CuBLAS(false);

    bool all_match = true;
    if (!reference.empty()) {
      auto data = load_reference(reference);
      for (int i = 0; data.contains("input_" + std::to_string(i)); ++i) {
        at::Tensor input = data.at("input_" + std::to_string(i)).toTensor();
        at::Tensor expected = data.at("expected_" + std::to_string(i)).toTensor();
        if (shape.empty()) shape.assign(input.sizes().begin() + 1, input.sizes().end());
        at::Tensor output = loader.run({input.to(device)}).at(0).cpu();
        const bool same_shape = output.sizes() == expected.sizes();
        const bool match = same_shape && at::allclose(output, expected, rtol, atol);
        std::cout << "input " << input.sizes() << " -> output " << output.sizes() << ": "
                  << (match ? "match" : "MISMATCH") << " (max |difference| "
                  << (same_shape ? (output - expected).abs().max().item().toDouble() : -1.0)
                  << ", rtol " << rtol << ", atol " << atol << ")\n";
        all_match &= match;
      }
    }

    if (batch >= 0) {
      if (std::string error = batch_error(meta, batch); !error.empty()) {
        std::cerr << "error: " << error << "\n";
        return 3;
      }
      TORCH_CHECK(!shape.empty(), "--batch needs --reference or --shape for the other sizes");
      std::vector<int64_t> sizes{batch};
      sizes.insert(sizes.end(), shape.begin(), shape.end());
      at::Tensor input = at::randn(sizes).to(device);
      at::Tensor output = loader.run({input}).at(0);
      std::cout << "batch " << batch << ": input " << input.sizes() << " -> output "
                << output.sizes() << "\n";
      if (repeat > 0) {
        for (int i = 0; i < 3; ++i) loader.run({input});  // warm-up
        synchronize(device);
        std::vector<double> ms;
        for (int i = 0; i < repeat; ++i) {
          const auto start = std::chrono::steady_clock::now();
          loader.run({input});
          synchronize(device);
          ms.push_back(std::chrono::duration<double, std::milli>(
                           std::chrono::steady_clock::now() - start).count());
        }
        std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
        std::cout << "median of " << repeat << " runs: " << ms[ms.size() / 2] << " ms\n";
      }
    }
    return all_match ? EXIT_SUCCESS : EXIT_FAILURE;
  } catch (const c10::Error& e) {
    std::cerr << "error: " << e.what_without_backtrace() << "\n";
    return 2;
  }
}
