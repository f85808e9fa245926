// Saving and loading the GPT's parameters (gpt_checkpoint.h).
#include "labs/train/gpt_checkpoint.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"

namespace dtl {

SafeTensors gpt_checkpoint(Gpt& model, const std::map<std::string, std::string>& extra) {
  SafeTensors ckpt;
  for (const GptTensor& t : model.tensors()) ckpt.add(t.name, t.full_shape, model.full_tensor(t.name));
  const GptConfig& c = model.config();
  ckpt.metadata() = extra;
  ckpt.metadata()["n_head"] = std::to_string(c.heads);
  ckpt.metadata()["n_layer"] = std::to_string(c.layers);
  ckpt.metadata()["n_embd"] = std::to_string(c.hidden);
  ckpt.metadata()["vocab"] = std::to_string(c.vocab);
  ckpt.metadata()["seq"] = std::to_string(c.seq);
  return ckpt;
}

namespace {

// The head count splits h into heads, and no shape shows it: a checkpoint trained with
// other heads would load without complaint and compute another function.
void check_heads(const Gpt& model, const SafeTensors& ckpt) {
  const auto it = ckpt.metadata().find("n_head");
  if (it == ckpt.metadata().end()) return;  // a file from elsewhere: the shapes are all we can check
  const std::string want = std::to_string(model.config().heads);
  if (it->second != want)
    throw UsageError(ckpt.source() + ": n_head is " + it->second + ", the model has " + want + " heads (give --heads " +
                     it->second + ")");
}

}  // namespace

void load_gpt_checkpoint(Gpt& model, const SafeTensors& ckpt) {
  check_heads(model, ckpt);
  for (const auto& [name, tensor] : ckpt.tensors()) {
    bool known = false;
    for (const GptTensor& t : model.tensors()) known = known || t.name == name;
    if (!known)
      throw UsageError(ckpt.source() + ": tensor '" + name + "' " + shape_text(tensor.shape) +
                       " is not in the model (a checkpoint of more layers?)");
  }
  std::vector<std::vector<float>> values;  // all checked before any is copied
  for (const GptTensor& t : model.tensors()) {
    values.push_back(ckpt.require_floats(t.name, t.full_shape));
    // A NaN or infinite weight trains into NaN (a run of such a file read "all checks passed").
    const auto bad =
        std::find_if(values.back().begin(), values.back().end(), [](float v) { return !std::isfinite(v); });
    if (bad != values.back().end())
      throw UsageError(ckpt.source() + ": tensor '" + t.name + "' holds " +
                       (std::isnan(*bad) ? "NaN" : "an infinite value") + " at element " +
                       std::to_string(bad - values.back().begin()) + "; this checkpoint cannot be trained from");
  }
  for (std::size_t i = 0; i < values.size(); ++i) model.set_full_tensor(model.tensors()[i].name, values[i]);
}

}  // namespace dtl
