// The cost of each piece of work of a GPT-2 training step: FLOPs, bytes moved, parameters,
// activation bytes, model-state bytes, and the study's TFLOP/s formula. Pure functions of the
// model spec and the sizes; the plan compiler, the simulator and the executor all read them.
//
// The model is a line of blocks, the unit every plan splits and every schedule names:
//   block 0            embedding (wte + wpe lookup)
//   block 1 + 2l       attention of layer l (ln1, qkv, attention, projection, residual)
//   block 2 + 2l       MLP of layer l (ln2, fc to n_inner, activation, fcproj, residual)
//   block 2L + 1       head (final LayerNorm, logits through the tied wte or an untied
//                      output matrix, cross-entropy)
#pragma once
#include <cstdint>
#include <string>

#include "models/matmul_shape.hpp"
#include "models/model_spec.hpp"

namespace fabtrain {

// tf32: fp32 tensors whose matrix products run on TF32 tensor cores (Ampere and later; cuBLAS's
// CUBLAS_TF32_TENSOR_OP_MATH, PyTorch's allow_tf32), as the executor's --precision tf32.
enum class Precision { fp32, fp16, bf16, tf32 };
Precision parse_precision(const std::string& text);  // "fp32" | "fp16" | "bf16" | "tf32"
const char* to_string(Precision p);
// Bytes of an element of weights, activations and gradients as computed (2 for fp16/bf16).
int element_bytes(Precision p);

// How attention is computed: naive materialises the b*heads*s*s scores (written, read back by
// one fused scale-mask-softmax kernel, kept for backward); eager is naive as eager PyTorch runs
// it, the scale, the causal mask and the softmax each a kernel of its own over the scores, the
// softmax in fp32 under autocast (PyTorch's autocast op list) and cast back for the product;
// flash (FlashAttention, cuDNN's fused attention, PyTorch SDPA) keeps them on chip and
// recomputes them in backward (Dao et al. 2022, sections 3.1 and 3.2).
enum class Attention { naive, eager, flash };
Attention parse_attention(const std::string& text);  // "naive" | "eager" | "flash"
const char* to_string(Attention a);

enum class BlockKind { embed, attn, mlp, head };
const char* to_string(BlockKind kind);
struct Block {
  BlockKind kind;
  int layer;  // -1 for embed and head
};
int block_count(const ModelSpec& model);  // 2L + 2
Block block_at(const ModelSpec& model, int index);
int first_block_of_layer(int layer);  // 1 + 2*layer

// FLOPs and bytes moved (for a roofline) of one block on one rank for a microbatch of b
// sequences of s tokens, with the block's matrices split over tp ranks (Megatron style). Counts
// matrix products and attention as Alpa and llm.c do (2 FLOPs per multiply-add); element-wise
// work adds bytes, not FLOPs. The head is replicated on every tensor-parallel rank (not split).
// Counted kernel by kernel, one kernel per operation as a block runs them (t = b*s tokens,
// activation A = t*C elements; naive scores S = b*heads*s*s/tp):
//   embed  lookup: read the token and position rows, write A
//   attn   LayerNorm (read A, write A); QKV product (A in, 3C^2/tp weights, 3A/tp out);
//          attention core: flash, one fused kernel (q, k, v in, A/tp out), or naive: QK^T
//          (2A/tp in, S out), softmax (S in, S out), PV (S and A/tp in, A/tp out); eager: QK^T,
//          scale, mask, softmax (in fp32 under mixed precision) and a cast back, each S in and
//          out, PV, and the heads made contiguous again (A/tp in and out);
//          projection (A/tp in, C^2/tp weights, A out); residual add (2A in, A out)
//   mlp    LayerNorm; FC product (A in, 4C^2/tp, 4A/tp out); GELU (4A/tp in and out);
//          projection (4A/tp in, 4C^2/tp, A out); residual add
//   head   LayerNorm; logits product (A in, V*C weights, t*V out); cross-entropy (t*V in and out)
// matmul_bytes are the weight products' own operands: a product moves them while it computes,
// so a roofline overlaps them with its FLOPs. The attention core (QK^T and PV, or the fused
// kernel) is kept apart, attention_flops and attention_bytes, as its own roofline: its products
// (head dimension deep) have a far lower arithmetic intensity than the weight products. The rest
// of bytes is element-wise traffic, kernels that only move bytes.
struct WorkCost {
  double flops = 0;            // all of it
  double bytes = 0;            // all of it
  double matmul_bytes = 0;     // of bytes, the weight products' operands
  double attention_flops = 0;  // of flops, the attention core's
  double attention_bytes = 0;  // of bytes, the attention core products' operands
  int kernels = 0;
  // The weight products by shape: forward M = t tokens, N = the output width, K = the input
  // width; backward each product twice, its input gradient (t x in x out) and its weight
  // gradient (out x in x t).
  std::vector<MatmulShape> products;
};
// With flash attention the scores move no HBM bytes, and backward recomputes them (one more
// product of the attention core: 2.5x its forward FLOPs instead of 2x). Backward is twice the
// forward's bytes and kernels (a product's input and weight gradients; an element-wise kernel's
// gradient reads its input and the incoming gradient).
WorkCost forward_cost(const ModelSpec& m, Block block, int b, int s, int tp, Precision p,
                      Attention attention = Attention::naive);
WorkCost backward_cost(const ModelSpec& m, Block block, int b, int s, int tp, Precision p,
                       Attention attention = Attention::naive);
// True for the blocks outside the transformer layers (embedding, head): the ranks of a
// tensor-parallel group either repeat them in full or, vocabulary-parallel, split their vocabulary
// (plan/plan.hpp vocab_split); recomputation never rebuilds them.
bool replicated_over_tp(Block block);

// Parameters of a block held by one of tp ranks, tp being the ranks that split it (layer norms and
// biases of the row-parallel outputs are replicated; the embedding tables live on the stages that
// use them). The embedding and the head split only the vocabulary: the token embedding's and an
// untied output matrix's rows (Megatron-LM's VocabParallelEmbedding and parallel output layer);
// the position embedding and the final layer norm stay whole; tp = 1 holds them all.
std::int64_t block_parameters(const ModelSpec& m, Block block, int tp);

// Activation bytes a block keeps from its forward for its backward, per microbatch, per rank.
// With recompute only the block input is kept and the rest is rebuilt in backward; with flash
// attention the scores are not kept (only a log-sum-exp per row).
double activation_bytes(const ModelSpec& m, Block block, int b, int s, int tp, Precision p,
                        bool recompute, Attention attention = Attention::naive);
// Bytes of the head's logits over the padded vocabulary in fp32 (frameworks compute the loss and
// its gradient in fp32 under mixed precision too), per microbatch; 0 for other blocks.
// Split over tp ranks under a vocabulary-parallel head (each holds its slice of the vocabulary).
double logits_fp32_bytes(const ModelSpec& m, Block block, int b, int s, int tp = 1);
// Bytes of the tensor passed between blocks (and between pipeline stages): b*s*C elements.
double boundary_bytes(const ModelSpec& m, int b, int s, Precision p);

// The study's (Alpa's compute_gpt_tflops) FLOPs of one step of global batch B sequences:
// 72*B*s*h^2*L*(1 + s/(6h)) + 6*B*s*h*V, with 96 instead of 72 under recomputation.
double alpa_step_flops(const ModelSpec& m, int global_batch, int s, bool recompute);
double alpa_tflops_per_gpu(const ModelSpec& m, int global_batch, int s, bool recompute,
                           double step_time_s, int gpus);
// Megatron-LM's (Narayanan et al. 2021, section 5.1; Shoeybi et al. 2019, appendix) FLOPs of one
// step: 96*B*s*L*h^2*(1 + s/(6h) + V/(16*L*h)) with recomputation, 72 instead of 96 without.
// What Megatron's published TFLOP/s per GPU divide by the step time.
double megatron_step_flops(const ModelSpec& m, int global_batch, int s, bool recompute);
// llm.c's estimate of training FLOPs per token: 6P + 6*L*C*s.
double training_flops_per_token(const ModelSpec& m, int s);

// Model-state bytes per GPU (ZeRO paper): weights, gradients, optimizer state (Adam m and v, plus
// fp32 master weights under mixed precision), for P parameters held by a data-parallel group of
// dp ranks at ZeRO stage 0..3.
struct ModelStateBytes {
  double weights = 0;
  double gradients = 0;
  double optimizer = 0;
  double total() const { return weights + gradients + optimizer; }
};
ModelStateBytes model_state_bytes(double parameters, Precision p, int zero_stage, int dp);

}  // namespace fabtrain
