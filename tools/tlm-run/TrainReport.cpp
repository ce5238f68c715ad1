//===- TrainReport.cpp - what tlm-run train says as it goes ---------------===//

#include "tools/tlm-run/TrainReport.h"

#include <cmath>
#include <cstdio>

namespace tlm::cli {

void Report::step(int64_t s, int64_t steps, const runtime::StepResult &r,
                  double lr, double ms, int64_t tokensPerStep) {
  stepMs += ms;
  double tokS = double(tokensPerStep) / (ms / 1e3);
  losses.push(double(r.loss));
  norms.push(double(r.gradNorm));
  lrs.push(lr);
  if (o.quiet || o.json)
    return;
  double elapsed = msSince(start) / 1e3;
  double eta = elapsed / double(s - first) * double(steps - s);
  std::fprintf(stderr,
               "step %lld/%lld: loss %.6f, lr %.3g, grad norm %.4f, "
               "%.0f tok/s, %s elapsed, ETA %s\n",
               (long long)s, (long long)steps, r.loss, lr, r.gradNorm, tokS,
               duration(elapsed).c_str(), duration(eta).c_str());
}

std::string Report::duration(double seconds) {
  char text[32];
  if (seconds < 60)
    std::snprintf(text, sizeof text, "%.1f s", seconds);
  else if (seconds < 3600)
    std::snprintf(text, sizeof text, "%dm%02ds", int(seconds) / 60,
                  int(seconds) % 60);
  else
    std::snprintf(text, sizeof text, "%dh%02dm", int(seconds) / 3600,
                  int(seconds) % 3600 / 60);
  return text;
}

void Report::validation(int64_t s, double loss) {
  json::Value v = json::Value::object();
  v.set("step", s);
  v.set("loss", loss);
  val.push(std::move(v));
  if (!o.quiet && !o.json)
    std::fprintf(stderr, "step %lld: validation loss %.6f, perplexity %.3f\n",
                 (long long)s, loss, std::exp(loss));
}

void Report::finish(int64_t steps, double ms, int64_t tokensPerStep) {
  if (!o.json)
    return;
  json::Value out = json::Value::object();
  out.set("steps", steps);
  out.set("losses", std::move(losses));
  out.set("grad_norms", std::move(norms));
  out.set("lrs", std::move(lrs));
  if (val.size())
    out.set("validation", std::move(val));
  // A resumed run already at --steps took none: no rates to give.
  if (steps > 0) {
    out.set("ms_per_step", stepMs / double(steps));
    out.set("tok_s", double(tokensPerStep * steps) / (stepMs / 1e3));
  }
  out.set("loop_s", ms / 1e3);
  if (ranks > 1) {
    out.set("ranks", int64_t(ranks));
    if (steps > 0)
      out.set("sum_ms_per_step", sumMs / double(steps));
  }
  printJsonDocument(out);
}

} // namespace tlm::cli
