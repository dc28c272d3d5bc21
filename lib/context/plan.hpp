// An attention plan: a validated configuration bound to a context's backend. Immutable after
// creation, so one plan may serve many threads.
#pragma once

#include "lib/attention/attention_config.hpp"
#include "lib/context/context.hpp"

struct fp8attn_plan_t {
  fp8attn::Context* context;
  fp8attn::AttentionConfig config;
};
