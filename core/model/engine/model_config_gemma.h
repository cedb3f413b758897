#pragma once
// The Gemma rows' readers of kFamilies (model_config.cpp): internal to config reading.
#include "core/model/engine/config_reader.h"
#include "core/model/engine/model_config.h"

namespace ropescope::model {

void gemmaTextDefaults(TextConfig& t);
// `root` stands where the other families get their rope object: Gemma 3's transformers-4 configs keep rope_theta there.
void readGemma3Text(const config::Reader& text, const config::Reader& root, TextConfig& t, const std::string& file);
void readGemma4Text(const config::Reader& text, const config::Reader& root, TextConfig& t, const std::string& file);
// Layer kinds, KV sharing and per-layer inputs fit each other (after the common shape checks).
void checkGemmaShapes(const TextConfig& t, const std::string& file);
void readGemma3Vision(const config::Reader& vision, ModelConfig& c, const std::string& file);
void readGemma4Vision(const config::Reader& vision, ModelConfig& c, const std::string& file);
void readGemma3Tokens(const config::Reader& root, ModelConfig& c);
void readGemma4Tokens(const config::Reader& root, ModelConfig& c);

} // namespace ropescope::model
