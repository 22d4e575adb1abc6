#include "models/costs.hpp"

#include "common/error.hpp"

namespace fabtrain {

Precision parse_precision(const std::string& text) {
  if (text == "fp32") return Precision::fp32;
  if (text == "fp16") return Precision::fp16;
  if (text == "bf16") return Precision::bf16;
  if (text == "tf32") return Precision::tf32;
  fail("unknown precision '{}' (expected fp32, fp16, bf16 or tf32)", text);
}

const char* to_string(Precision p) {
  switch (p) {
    case Precision::fp32:
      return "fp32";
    case Precision::fp16:
      return "fp16";
    case Precision::bf16:
      return "bf16";
    case Precision::tf32:
      return "tf32";
  }
  return "?";
}

int element_bytes(Precision p) { return p == Precision::fp32 || p == Precision::tf32 ? 4 : 2; }

Attention parse_attention(const std::string& text) {
  if (text == "naive") return Attention::naive;
  if (text == "eager") return Attention::eager;
  if (text == "flash") return Attention::flash;
  fail("unknown attention '{}' (expected naive, eager or flash)", text);
}

const char* to_string(Attention a) {
  switch (a) {
    case Attention::naive:
      return "naive";
    case Attention::eager:
      return "eager";
    case Attention::flash:
      return "flash";
  }
  return "?";
}

const char* to_string(BlockKind kind) {
  switch (kind) {
    case BlockKind::embed:
      return "embed";
    case BlockKind::attn:
      return "attn";
    case BlockKind::mlp:
      return "mlp";
    case BlockKind::head:
      return "head";
  }
  return "?";
}

int block_count(const ModelSpec& m) { return 2 * m.n_layer + 2; }
int first_block_of_layer(int layer) { return 1 + 2 * layer; }

Block block_at(const ModelSpec& m, int index) {
  if (index < 0 || index >= block_count(m))
    fail("block {} out of range for {} ({} blocks)", index, m.name, block_count(m));
  if (index == 0) return {BlockKind::embed, -1};
  if (index == block_count(m) - 1) return {BlockKind::head, -1};
  const int layer = (index - 1) / 2;
  return {(index - 1) % 2 == 0 ? BlockKind::attn : BlockKind::mlp, layer};
}

bool replicated_over_tp(Block block) {
  return block.kind == BlockKind::embed || block.kind == BlockKind::head;
}

WorkCost forward_cost(const ModelSpec& m, Block block, int b, int s, int tp, Precision p,
                      Attention attention) {
  const double C = m.n_embd, V = m.vocab_size, t = double(b) * s, e = element_bytes(p);
  const double A = t * C * e;  // bytes of one activation (b x s x C)
  WorkCost w;
  auto product = [&](double flops, double bytes, double n_out, double k_in) {
    add_product(w.products, t, n_out, k_in);
    w.flops += flops;
    w.bytes += bytes;
    w.matmul_bytes += bytes;
    ++w.kernels;
  };
  auto attention_product = [&](double flops, double bytes) {
    w.flops += flops;
    w.bytes += bytes;
    w.attention_flops += flops;
    w.attention_bytes += bytes;
    ++w.kernels;
  };
  auto elementwise = [&](double bytes) {
    w.bytes += bytes;
    ++w.kernels;
  };
  switch (block.kind) {
    case BlockKind::embed:
      elementwise(A + s * C * e + A);
      break;
    case BlockKind::attn: {
      const double core = 4 * t * s * C / tp;  // QK^T and PV
      elementwise(2 * A);
      product(6 * t * C * C / tp, 3 * C * C * e / tp + A + 3 * A / tp, 3 * C / tp, C);
      if (attention == Attention::flash) {
        attention_product(core, 4 * A / tp);
      } else {
        const double S = double(b) * m.n_head * s * s * e / tp;
        attention_product(core / 2, 2 * A / tp + S);
        if (attention == Attention::naive) {
          elementwise(2 * S);
        } else {
          // scale and mask (S in, S out each); softmax in fp32 and, under mixed precision, cast
          // back to the products' precision
          const double S32 = S * 4 / e;
          elementwise(2 * S);
          elementwise(2 * S);
          elementwise(S + S32);
          if (e < 4) elementwise(S32 + S);
        }
        attention_product(core / 2, S + 2 * A / tp);
        if (attention == Attention::eager) elementwise(2 * A / tp);  // heads made contiguous
      }
      product(2 * t * C * C / tp, C * C * e / tp + A / tp + A, C, C / tp);
      elementwise(3 * A);
      break;
    }
    case BlockKind::mlp: {
      // fc and fcproj, 2*t*C*F each (8*t*C^2 at GPT-2's F = 4C); the activation (GELU or ReLU
      // alike: element-wise, bytes only) reads and writes the F-wide hidden
      const double F = m.mlp_width(), H = t * F * e;  // bytes of the hidden (b x s x F)
      elementwise(2 * A);
      product(2 * t * C * F / tp, C * F * e / tp + A + H / tp, F / tp, C);
      elementwise(2 * H / tp);
      product(2 * t * C * F / tp, C * F * e / tp + H / tp + A, C, F / tp);
      elementwise(3 * A);
      break;
    }
    case BlockKind::head:  // tp > 1: a vocabulary-parallel head, each rank its V / tp logits
      elementwise(2 * A);
      product(2 * t * C * V / tp, V * C * e / tp + A + t * V * e / tp, V / tp, C);
      elementwise(2 * t * V * e / tp);
      break;
  }
  return w;
}

WorkCost backward_cost(const ModelSpec& m, Block block, int b, int s, int tp, Precision p,
                       Attention attention) {
  const WorkCost f = forward_cost(m, block, b, s, tp, p, attention);
  WorkCost w{2 * f.flops,           2 * f.bytes,           2 * f.matmul_bytes,
             2 * f.attention_flops, 2 * f.attention_bytes, 2 * f.kernels};
  for (const auto& p : f.products) {
    add_product(w.products, p.m, p.k, p.n, p.count);  // input gradient: t x in x out
    add_product(w.products, p.n, p.k, p.m, p.count);  // weight gradient: out x in x t
  }
  if (attention == Attention::flash && block.kind == BlockKind::attn) {
    const double again = 0.5 * 4.0 * double(b) * s * s * m.n_embd / tp;  // the scores recomputed
    w.flops += again;
    w.attention_flops += again;
  }
  return w;
}

std::int64_t block_parameters(const ModelSpec& m, Block block, int tp) {
  const std::int64_t C = m.n_embd;
  switch (block.kind) {
    case BlockKind::embed:
      return std::int64_t(m.vocab_size) * C / tp + std::int64_t(m.n_ctx) * C;
    case BlockKind::attn:  // ln1 (2C) + qkv (3C^2+3C)/tp + proj C^2/tp + proj bias C
      return 2 * C + (3 * C * C + 3 * C) / tp + C * C / tp + C;
    case BlockKind::mlp: {  // ln2 (2C) + fc (C*F+F)/tp + fcproj C*F/tp + bias C
      const std::int64_t F = m.mlp_width();
      return 2 * C + (C * F + F) / tp + C * F / tp + C;
    }
    case BlockKind::head:  // final LayerNorm; the output matrix is the tied wte, or its own
      return 2 * C + (m.tie_word_embeddings ? 0 : std::int64_t(m.vocab_size) * C / tp);
  }
  return 0;
}

double activation_bytes(const ModelSpec& m, Block block, int b, int s, int tp, Precision p,
                        bool recompute, Attention attention) {
  const double C = m.n_embd, tokens = double(b) * s, e = element_bytes(p);
  const double input = tokens * C * e;
  switch (block.kind) {
    case BlockKind::embed:
      return 0;  // needs only the token ids
    case BlockKind::attn:
      if (recompute) return input;
      // ln1 out, mean/rstd, qkv, attention out, pre-softmax and softmax scores, residual
      if (attention == Attention::flash)  // log-sum-exp per row instead of the scores
        return tokens * C * e * (2 + 4.0 / tp) + 2 * tokens * 4 + tokens * m.n_head * 4.0 / tp;
      return tokens * C * e * (2 + 4.0 / tp) + 2 * tokens * 4 + 2.0 * b * m.n_head * s * s * e / tp;
    case BlockKind::mlp:
      if (recompute) return input;
      // ln2 out, mean/rstd, fc out, activation out (F wide each), residual
      return tokens * e * (2 * C + 2.0 * m.mlp_width() / tp) + 2 * tokens * 4;
    case BlockKind::head:
      // final LayerNorm out, mean/rstd, probabilities over the rank's part of the vocabulary
      return tokens * C * e + 2 * tokens * 4 + tokens * m.padded_vocab() * e / tp;
  }
  return 0;
}

double logits_fp32_bytes(const ModelSpec& m, Block block, int b, int s, int tp) {
  return block.kind == BlockKind::head ? double(b) * s * m.padded_vocab() * 4.0 / tp : 0;
}

double boundary_bytes(const ModelSpec& m, int b, int s, Precision p) {
  return double(b) * s * m.n_embd * element_bytes(p);
}

// Both formulas assume GPT-2's MLP width F = 4h: 72*h^2 is 3 passes x 2 FLOPs x (4h^2 attention
// matrices + 2*h*F MLP matrices). For another n_inner the same count with F is used, which is the
// published formula exactly when F = 4h.
static double layer_matrix_flops_per_token(const ModelSpec& m) {
  const double h = m.n_embd, F = m.mlp_width();
  return 2 * (4 * h * h + 2 * h * F);  // 24*h^2 at F = 4h
}

double alpa_step_flops(const ModelSpec& m, int B, int s, bool recompute) {
  const double h = m.n_embd, L = m.n_layer, V = m.vocab_size;
  const double passes = recompute ? 4 : 3;
  return passes * B * s * L * (layer_matrix_flops_per_token(m) + 4 * h * s) +
         6 * double(B) * s * h * V;
}

double alpa_tflops_per_gpu(const ModelSpec& m, int B, int s, bool recompute, double step_time_s,
                           int gpus) {
  return alpa_step_flops(m, B, s, recompute) / step_time_s / gpus / 1e12;
}

double megatron_step_flops(const ModelSpec& m, int B, int s, bool recompute) {
  const double h = m.n_embd, L = m.n_layer, V = m.vocab_size;
  const double factor = recompute ? 96 : 72;
  const double matrices = layer_matrix_flops_per_token(m) / (24 * h * h);  // 1 at F = 4h
  return factor * B * s * L * h * h * (matrices + s / (6 * h) + V / (16 * L * h));
}

double training_flops_per_token(const ModelSpec& m, int s) {
  // 6P counts the output matrix once: an untied model's wte is a lookup, not a product.
  const double untied = m.tie_word_embeddings ? 0 : double(m.vocab_size) * m.n_embd;
  return 6.0 * (double(m.parameters()) - untied) + 6.0 * m.n_layer * m.n_embd * double(s);
}

ModelStateBytes model_state_bytes(double P, Precision p, int zero, int dp) {
  if (zero < 0 || zero > 3) fail("zero={} out of range (0-3)", zero);
  const double e = element_bytes(p);
  // fp32: Adam m and v (8 B); mixed precision: fp32 master weights, m and v (12 B).
  const double k = element_bytes(p) == 4 ? 8 : 12;
  ModelStateBytes s{P * e, P * e, P * k};
  if (zero >= 1) s.optimizer /= dp;
  if (zero >= 2) s.gradients /= dp;
  if (zero >= 3) s.weights /= dp;
  return s;
}

}  // namespace fabtrain
