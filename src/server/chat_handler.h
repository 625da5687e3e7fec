#pragma once
// POST /v1/chat/completions: chat template, n engine requests, reasoning and tool-call parsing,
// logprobs, streaming or not.

#include <memory>

#include "server/generation_job.h"
#include "server/openai_schema.h"
#include "server/server_context.h"

namespace dcu::server {

// The prompt text of a chat request, as the chat template renders it (continue_final_message as
// Hugging Face does it). Throws ApiException when the template refuses the messages.
std::string render_chat_prompt(const ServerContext& ctx, const ChatRequest& request);

std::shared_ptr<GenerationJob> make_chat_job(const ServerContext& ctx, const ChatRequest& request);

}  // namespace dcu::server
