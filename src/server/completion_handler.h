#pragma once
// POST /v1/completions: prompts (text or token ids) x n engine requests, echo, logprobs (prompt
// logprobs with echo, as lm-eval uses them), streaming or not.

#include <memory>

#include "server/generation_job.h"
#include "server/openai_schema.h"
#include "server/server_context.h"

namespace dcu::server {

// Tokenizes and checks lengths; throws ApiException on a request that cannot be served.
std::shared_ptr<GenerationJob> make_completion_job(const ServerContext& ctx, const CompletionRequest& request);

}  // namespace dcu::server
