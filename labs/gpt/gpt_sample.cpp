// Text from the trained GPT (gpt_lab.h's sample_text). The model takes a full [S][B]
// batch, and attention is causal, so column 0 holds the context from position 0 and the
// logits at its last position do not depend on what fills the rest.
#include <algorithm>
#include <cmath>
#include <random>

#include "core/memory/device_ops.h"
#include "labs/gpt/gpt_lab.h"

namespace dtl {

namespace {

// The logits of column 0 at position `pos`, all V of them: each rank holds V/T vocabulary
// entries (vocab-parallel head), in rank order, so an all-gather puts them in place.
std::vector<float> full_logits_row(Gpt& model, Comm& comm, int pos) {
  const int Vl = model.vocab_local(), B = model.config().batch;
  const float* row = model.logits() + std::size_t(pos) * std::size_t(B) * std::size_t(Vl);
  std::vector<float> full(std::size_t(Vl) * std::size_t(model.tp_size()));
  if (model.tp_size() > 1)
    comm.all_gather(row, full.data(), std::size_t(Vl), DType::f32);
  else
    copy_bytes(full.data(), row, std::size_t(Vl) * sizeof(float));  // the logits may live on a GPU
  return full;
}

// Draws from softmax(logits / temperature) over the ids the text uses (the ids past them
// are padding of the vocabulary and decode to nothing).
int draw(const std::vector<float>& logits, int used, float temperature, std::mt19937& gen) {
  const float top = *std::max_element(logits.begin(), logits.begin() + used);
  std::vector<double> weight(static_cast<std::size_t>(used));
  for (int v = 0; v < used; ++v) weight[std::size_t(v)] = std::exp(double(logits[std::size_t(v)] - top) / temperature);
  return std::discrete_distribution<int>(weight.begin(), weight.end())(gen);
}

}  // namespace

std::string sample_text(Gpt& model, Comm& comm, const TextCorpus& corpus, const std::string& prompt, int count,
                        float temperature, std::uint32_t seed) {
  const int S = model.config().seq, B = model.config().batch;
  std::vector<std::int32_t> text = corpus.encode(prompt);
  const std::size_t prompt_length = text.size();
  std::mt19937 gen(seed);  // every rank draws the same numbers from the same logits
  std::vector<int> batch(std::size_t(S) * std::size_t(B), 0);
  for (int i = 0; i < count; ++i) {
    const std::size_t context = std::min<std::size_t>(text.size(), std::size_t(S));
    for (std::size_t s = 0; s < context; ++s) batch[s * std::size_t(B)] = text[text.size() - context + s];
    model.forward(batch.data(), batch.data());  // the targets only feed a loss we do not read
    text.push_back(draw(full_logits_row(model, comm, int(context) - 1), corpus.symbols_used(), temperature, gen));
  }
  return corpus.decode(std::vector<std::int32_t>(text.begin() + std::ptrdiff_t(prompt_length), text.end()));
}

}  // namespace dtl

namespace dtl {

std::string printable_text(std::string_view bytes) {
  std::string out;
  for (std::size_t i = 0; i < bytes.size();) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c == '\n')
      out += "↵", ++i;
    else if (c < 0x20 || c == 0x7f)
      out += ' ', ++i;
    else if (c < 0x80)
      out += char(c), ++i;
    else {
      // Well-formed UTF-8 (RFC 3629): a lead byte C2–F4, then 1–3 bytes 80–BF; after E0, ED,
      // F0 and F4 the second byte is narrower (no overlong forms, surrogates, or > U+10FFFF).
      const std::size_t length = c >= 0xC2 && c <= 0xDF   ? 2
                                 : c >= 0xE0 && c <= 0xEF ? 3
                                 : c >= 0xF0 && c <= 0xF4 ? 4
                                                          : 0;
      bool whole = length > 0 && i + length <= bytes.size();
      for (std::size_t k = 1; whole && k < length; ++k) {
        const auto b = static_cast<unsigned char>(bytes[i + k]);
        unsigned lo = 0x80, hi = 0xBF;
        if (k == 1) lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : lo, hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : hi;
        whole = b >= lo && b <= hi;
      }
      if (whole)
        out.append(bytes.substr(i, length)), i += length;
      else
        out += '?', ++i;
    }
  }
  return out;
}

}  // namespace dtl
