-- Upstreams that speak the OpenAI Responses API (issue 14).
ALTER TYPE "UpstreamProtocol" ADD VALUE 'openai-responses' BEFORE 'demo';
