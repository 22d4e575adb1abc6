// The GPT-2 operations of every built backend (exec/backends/backend.hpp) against the CPU's: one
// table of (operation, shapes, tolerance), each row run on deterministic inputs and every output
// compared with the CPU backend's (the CPU against a second CPU instance, bit for bit: reruns must
// give the same bits). A backend that cannot run here (no GPU) is skipped and says so. Also: the
// CPU backward operations are the gradients of their forwards (central differences).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "exec/backends/backend.hpp"
#include "exec/model/cpu_ops.hpp"
#include "relative_difference.hpp"

using namespace fabtrain;

namespace {

std::vector<float> pattern(std::size_t n, float seed, float scale = 0.5f) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = scale * std::sin(0.37f * float(i) + seed);
  return v;
}

std::vector<int> ids(std::size_t n, int vocab, int seed) {  // with repeats: vocab < n
  std::vector<int> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = int((i * 7 + std::size_t(seed) * 3 + i / 5) % std::size_t(vocab));
  return v;
}

// Buffers of one backend for one row: inputs uploaded, outputs read back.
struct Arena {
  Gpt2Ops& ops;
  std::vector<Buffer> buffers;
  std::vector<std::unique_ptr<Ids>> id_sets;
  explicit Arena(Gpt2Ops& o) : ops(o) {}
  float* in(const std::vector<float>& host) {
    buffers.emplace_back();
    float* p = buffers.back().sized(ops, std::int64_t(host.size()));
    ops.upload(p, host.data(), std::int64_t(host.size()));
    return p;
  }
  float* out(std::size_t n) { return in(std::vector<float>(n, 0.0f)); }
  const Ids& id(const std::vector<int>& host, bool by_token) {
    id_sets.push_back(ops.make_ids());
    ops.set_ids(*id_sets.back(), host, by_token);
    return *id_sets.back();
  }
  std::vector<float> read(const float* p, std::size_t n) {
    std::vector<float> host(n);
    ops.download(host.data(), p, std::int64_t(n));
    return host;
  }
};

using Outputs = std::vector<std::vector<float>>;

struct Row {
  const char* op;
  const char* shapes;
  double tolerance;  // relative to the largest magnitude of the CPU's output
  std::function<Outputs(Arena&)> run;
};

constexpr int N = 64, C = 96, O = 80, B = 2, T = 16, NH = 4, HD = 8, V = 50, VP = 64;

const std::vector<Row>& table() {
  static const std::vector<Row> rows = {
      {"layernorm_forward", "n=64 c=96", 1e-5,
       [](Arena& a) {
         float *out = a.out(N * C), *mean = a.out(N), *rstd = a.out(N);
         a.ops.layernorm_forward(out, mean, rstd, a.in(pattern(N * C, 1)), a.in(pattern(C, 2)),
                                 a.in(pattern(C, 3)), N, C);
         return Outputs{a.read(out, N * C), a.read(mean, N), a.read(rstd, N)};
       }},
      {"layernorm_backward", "n=64 c=96, dx/dw/db accumulate", 2e-4,
       [](Arena& a) {
         const float* x = a.in(pattern(N * C, 1));
         const float* w = a.in(pattern(C, 2));
         float *ln = a.out(N * C), *mean = a.out(N), *rstd = a.out(N);
         a.ops.layernorm_forward(ln, mean, rstd, x, w, a.in(pattern(C, 3)), N, C);
         float *dx = a.in(pattern(N * C, 4)), *dw = a.in(pattern(C, 5)), *db = a.in(pattern(C, 6));
         a.ops.layernorm_backward(dx, dw, db, a.in(pattern(N * C, 7)), x, w, mean, rstd, N, C);
         return Outputs{a.read(dx, N * C), a.read(dw, C), a.read(db, C)};
       }},
      {"linear_forward", "n=64 in=96 out=80, with and without bias", 2e-4,
       [](Arena& a) {
         const float *in = a.in(pattern(N * C, 1)), *w = a.in(pattern(O * C, 2, 0.1f));
         float *with = a.out(N * O), *without = a.out(N * O);
         a.ops.linear_forward(with, in, w, a.in(pattern(O, 3)), N, C, O);
         a.ops.linear_forward(without, in, w, nullptr, N, C, O);
         return Outputs{a.read(with, N * O), a.read(without, N * O)};
       }},
      {"linear_backward", "n=64 in=96 out=80, dw/dbias accumulate", 2e-4,
       [](Arena& a) {
         float *din = a.out(N * C), *dw = a.in(pattern(O * C, 4)), *dbias = a.in(pattern(O, 5));
         a.ops.linear_backward(din, dw, dbias, a.in(pattern(N * O, 6)), a.in(pattern(N * C, 1)),
                               a.in(pattern(O * C, 2, 0.1f)), N, C, O);
         return Outputs{a.read(din, N * C), a.read(dw, O * C), a.read(dbias, O)};
       }},
      {"attention_forward", "b=2 t=16 nh=4 hd=8", 2e-4,
       [](Arena& a) {
         float *y = a.out(B * T * NH * HD), *att = a.out(B * NH * T * T);
         a.ops.attention_forward(y, att, a.in(pattern(B * T * 3 * NH * HD, 1)), B, T, NH, HD);
         return Outputs{a.read(y, B * T * NH * HD), a.read(att, B * NH * T * T)};
       }},
      {"attention_backward", "b=2 t=16 nh=4 hd=8", 2e-4,
       [](Arena& a) {
         const float* qkv = a.in(pattern(B * T * 3 * NH * HD, 1));
         float *y = a.out(B * T * NH * HD), *att = a.out(B * NH * T * T);
         a.ops.attention_forward(y, att, qkv, B, T, NH, HD);
         float* dqkv = a.out(B * T * 3 * NH * HD);
         a.ops.attention_backward(dqkv, a.in(pattern(B * T * NH * HD, 2)), att, qkv, B, T, NH, HD);
         return Outputs{a.read(dqkv, B * T * 3 * NH * HD)};
       }},
      {"gelu_forward", "1000 values", 1e-5,
       [](Arena& a) {
         float* out = a.out(1000);
         a.ops.gelu_forward(out, a.in(pattern(1000, 1, 3.0f)), 1000);
         return Outputs{a.read(out, 1000)};
       }},
      {"gelu_backward", "1000 values, dx aliasing dout", 1e-5,
       [](Arena& a) {
         float* d = a.in(pattern(1000, 2));
         a.ops.gelu_backward(d, a.in(pattern(1000, 1, 3.0f)), d, 1000);
         return Outputs{a.read(d, 1000)};
       }},
      {"crossentropy_forward", "n=64 v=50 vp=64", 1e-5,
       [](Arena& a) {
         float *lse = a.out(N), *rows = a.out(N);
         a.ops.crossentropy_forward(lse, rows, a.in(pattern(N * VP, 1, 4.0f)),
                                    a.id(ids(N, V, 1), false), N, V, VP);
         return Outputs{a.read(lse, N), a.read(rows, N)};
       }},
      {"crossentropy_backward", "n=64 v=50 vp=64, in place", 1e-5,
       [](Arena& a) {
         const Ids& targets = a.id(ids(N, V, 1), false);
         float *logits = a.in(pattern(N * VP, 1, 4.0f)), *lse = a.out(N), *rows = a.out(N);
         a.ops.crossentropy_forward(lse, rows, logits, targets, N, V, VP);
         a.ops.crossentropy_backward(logits, lse, targets, N, V, VP);
         return Outputs{a.read(logits, N * VP)};
       }},
      {"embedding_forward", "n=32 t=16 c=96 vocab=50", 1e-6,
       [](Arena& a) {
         float* out = a.out(2 * T * C);
         a.ops.embedding_forward(out, a.id(ids(2 * T, V, 2), true), a.in(pattern(V * C, 1)),
                                 a.in(pattern(T * C, 2)), 2 * T, T, C);
         return Outputs{a.read(out, 2 * T * C)};
       }},
      {"embedding_backward", "n=32 t=16 c=96 vocab=50, repeated tokens, accumulate", 1e-5,
       [](Arena& a) {
         float *dwte = a.in(pattern(V * C, 3)), *dwpe = a.in(pattern(T * C, 4));
         a.ops.embedding_backward(dwte, dwpe, a.in(pattern(2 * T * C, 5)),
                                  a.id(ids(2 * T, V, 2), true), 2 * T, T, C);
         return Outputs{a.read(dwte, V * C), a.read(dwpe, T * C)};
       }},
      {"residual_add", "n=64 c=96, with bias", 1e-6,
       [](Arena& a) {
         float* out = a.out(N * C);
         a.ops.residual_add(out, a.in(pattern(N * C, 1)), a.in(pattern(N * C, 2)),
                            a.in(pattern(C, 3)), N, C);
         return Outputs{a.read(out, N * C)};
       }},
      {"zero, upload, download", "1000 values", 0,
       [](Arena& a) {
         float* p = a.in(pattern(1000, 1));
         std::vector<float> before = a.read(p, 1000);
         a.ops.zero(p + 10, 100);
         a.ops.synchronize();
         return Outputs{before, a.read(p, 1000)};
       }},
      {"copy_runs", "3 runs of 1000 values, gaps kept", 0,
       [](Arena& a) {
         float *dst = a.in(pattern(1000, 2)), *src = a.in(pattern(1000, 1));
         const std::vector<CopyRun> runs = {{0, 500, 100}, {900, 0, 100}, {300, 700, 1}};
         a.ops.copy_runs(dst, src, runs);
         return Outputs{a.read(dst, 1000)};
       }},
      {"add_into", "1000 values", 0,
       [](Arena& a) {
         float* dst = a.in(pattern(1000, 2));
         a.ops.add_into(dst, a.in(pattern(1000, 1)), 1000);
         return Outputs{a.read(dst, 1000)};
       }},
  };
  return rows;
}

// Every row of the table on `ops` against a fresh CPU backend; exact: tolerance 0 for all rows.
void check_against_cpu(Gpt2Ops& ops, bool exact) {
  for (const Row& row : table()) {
    INFO(ops.name() << " " << row.op << " (" << row.shapes << ")");
    const std::unique_ptr<Gpt2Ops> cpu = make_cpu_ops();
    Arena want_arena(*cpu), got_arena(ops);
    const Outputs want = row.run(want_arena);
    const Outputs got = row.run(got_arena);
    REQUIRE(got.size() == want.size());
    for (std::size_t k = 0; k < got.size(); ++k) {
      INFO("output " << k);
      if (exact)
        CHECK(got[k] == want[k]);
      else
        CHECK(test::relative_difference(got[k], want[k]) <= row.tolerance);
    }
  }
}

}  // namespace

TEST_CASE("backend ops: the CPU backend is registered and gives the same bits on every run") {
  const std::vector<std::string> names = backend_names();
  REQUIRE(std::find(names.begin(), names.end(), "cpu") != names.end());
  const BackendEntry& entry = find_backend("cpu");
  CHECK(entry.unavailable().empty());
  const Backend backend = entry.make({});
  CHECK(backend.name == "cpu");
  CHECK_FALSE(bool(backend.make_communicator));
  const std::unique_ptr<Gpt2Ops> ops = backend.make_ops();
  CHECK(ops->host_memory());
  check_against_cpu(*ops, true);
}

TEST_CASE("backend ops: every other built backend matches the CPU backend, row by row") {
  int ran = 0;
  for (const std::string& name : backend_names()) {
    if (name == "cpu") continue;
    const BackendEntry& entry = find_backend(name);
    if (const std::string why = entry.unavailable(); !why.empty()) {
      MESSAGE("SKIPPED: the " << name << " rows: " << why);
      continue;
    }
    const std::unique_ptr<Gpt2Ops> ops = entry.make({}).make_ops();
    check_against_cpu(*ops, false);
    ++ran;
  }
  if (ran == 0 && backend_names().size() == 1)
    MESSAGE(
        "SKIPPED: no backend but the CPU is built here (configure with CUDA for the cuda rows)");
}

TEST_CASE("backend ops: an unknown --device is refused by name, listing the built ones") {
  try {
    (void)find_backend("tpu");
    FAIL("find_backend(\"tpu\") did not throw");
  } catch (const std::exception& e) {
    const std::string what = e.what();
    CHECK(what.find("--device tpu") != std::string::npos);
    CHECK(what.find("cpu") != std::string::npos);
  }
}

// L(x) = sum(r * f(x)) for a fixed r: backward(dout = r) must give dL/dx, checked against
// central differences at a few positions (fp32 forward, the sum in double).
TEST_CASE("backend ops: the CPU backward operations are the gradients of their forwards") {
  const std::unique_ptr<Gpt2Ops> ops = make_cpu_ops();
  auto check_gradient = [](const char* what, std::vector<float> x, const std::vector<float>& grad,
                           const std::function<double(const std::vector<float>&)>& loss) {
    INFO(what);
    double worst = 0, scale = 1e-30;
    for (std::size_t i = 0; i < x.size(); i += std::max<std::size_t>(1, x.size() / 23)) {
      const float keep = x[i], h = 1e-2f;
      x[i] = keep + h;
      const double up = loss(x);
      x[i] = keep - h;
      const double down = loss(x);
      x[i] = keep;
      const double numeric = (up - down) / (2.0 * h);
      worst = std::max(worst, std::fabs(numeric - grad[i]));
      scale = std::max(scale, std::fabs(numeric));
    }
    CHECK(worst / scale < 2e-2);
  };
  const int n = 8, c = 16, o = 12;
  const std::vector<float> r_nc = pattern(n * c, 9), w = pattern(c, 2), bias = pattern(c, 3);
  auto dot = [](const std::vector<float>& a, const std::vector<float>& b) {
    double s = 0;
    for (std::size_t i = 0; i < a.size(); ++i) s += double(a[i]) * b[i];
    return s;
  };
  {  // LayerNorm: dx
    const std::vector<float> x = pattern(n * c, 1, 2.0f);
    auto loss = [&](const std::vector<float>& xv) {
      std::vector<float> out(n * c), mean(n), rstd(n);
      ops->layernorm_forward(out.data(), mean.data(), rstd.data(), xv.data(), w.data(), bias.data(),
                             n, c);
      return dot(out, r_nc);
    };
    std::vector<float> out(n * c), mean(n), rstd(n), dx(n * c, 0.0f), dw(c, 0.0f), db(c, 0.0f);
    ops->layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), bias.data(), n,
                           c);
    ops->layernorm_backward(dx.data(), dw.data(), db.data(), r_nc.data(), x.data(), w.data(),
                            mean.data(), rstd.data(), n, c);
    check_gradient("layernorm dx", x, dx, loss);
  }
  {  // linear: din and dw
    const std::vector<float> x = pattern(n * c, 1), wl = pattern(o * c, 4, 0.3f),
                             r = pattern(n * o, 5);
    std::vector<float> din(n * c), dw(o * c, 0.0f), dbias(o, 0.0f);
    ops->linear_backward(din.data(), dw.data(), dbias.data(), r.data(), x.data(), wl.data(), n, c,
                         o);
    auto forward = [&](const std::vector<float>& xv, const std::vector<float>& wv) {
      std::vector<float> out(n * o);
      ops->linear_forward(out.data(), xv.data(), wv.data(), nullptr, n, c, o);
      return dot(out, r);
    };
    check_gradient("linear din", x, din,
                   [&](const std::vector<float>& xv) { return forward(xv, wl); });
    check_gradient("linear dw", wl, dw,
                   [&](const std::vector<float>& wv) { return forward(x, wv); });
  }
  {  // GELU
    const std::vector<float> x = pattern(200, 1, 3.0f), r = pattern(200, 6);
    std::vector<float> dx(200);
    ops->gelu_backward(dx.data(), x.data(), r.data(), 200);
    check_gradient("gelu dx", x, dx, [&](const std::vector<float>& xv) {
      std::vector<float> out(200);
      ops->gelu_forward(out.data(), xv.data(), 200);
      return dot(out, r);
    });
  }
  {  // attention: dqkv
    const int b = 1, t = 6, nh = 2, hd = 4, width = 3 * nh * hd;
    const std::vector<float> qkv = pattern(b * t * width, 1), r = pattern(b * t * nh * hd, 7);
    std::vector<float> y(b * t * nh * hd), att(b * nh * t * t), dqkv(qkv.size());
    ops->attention_forward(y.data(), att.data(), qkv.data(), b, t, nh, hd);
    ops->attention_backward(dqkv.data(), r.data(), att.data(), qkv.data(), b, t, nh, hd);
    check_gradient("attention dqkv", qkv, dqkv, [&](const std::vector<float>& q) {
      std::vector<float> yv(y.size()), a(att.size());
      ops->attention_forward(yv.data(), a.data(), q.data(), b, t, nh, hd);
      return dot(yv, r);
    });
  }
  {  // cross-entropy: d(mean loss)/d(logits)
    const int v = 10, vp = 12;
    const std::vector<float> logits = pattern(n * vp, 1, 2.0f);
    const std::vector<int> y = ids(n, v, 3);
    const std::unique_ptr<Ids> targets = ops->make_ids();
    ops->set_ids(*targets, y, false);
    auto loss = [&](const std::vector<float>& l) {
      std::vector<float> lse(n), rows(n);
      ops->crossentropy_forward(lse.data(), rows.data(), l.data(), *targets, n, v, vp);
      double sum = 0;
      for (float x : rows) sum += x;
      return sum / n;
    };
    std::vector<float> d = logits, lse(n), rows(n);
    ops->crossentropy_forward(lse.data(), rows.data(), d.data(), *targets, n, v, vp);
    ops->crossentropy_backward(d.data(), lse.data(), *targets, n, v, vp);
    check_gradient("crossentropy dlogits", logits, d, loss);
  }
}
