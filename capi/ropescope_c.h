/* libropescope_c: RopeScope's position rules and scheme geometry for other languages (the Python package
 * python/ropescope binds it with ctypes). Plain C: opaque handles, caller-owned arrays, an int status and a
 * one-line error string. It links neither LibTorch nor Qt, so it can be loaded into a process that holds
 * PyTorch or PyQt of its own.
 *
 * Every function returning int returns RS_OK, or RS_INVALID_INPUT (the input is wrong; rs_last_error says what
 * and rs_last_error_parameter which parameter, if one) or RS_ERROR (anything else, e.g. out of memory). The
 * error string is per thread and valid until the thread's next call. Arrays are row-major (C order). */
#ifndef ROPESCOPE_C_H
#define ROPESCOPE_C_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define RS_API __attribute__((visibility("default")))
#else
#define RS_API
#endif

#define RS_OK 0
#define RS_INVALID_INPUT 1
#define RS_ERROR 2

RS_API const char* rs_last_error(void);
RS_API const char* rs_last_error_parameter(void); /* "" when the error names no parameter */
RS_API int32_t rs_abi_version(void);              /* bumped whenever a struct or a signature below changes */

/* ---- model families' position rules ---- */

/* A tensor view: `given` 0 means absent. At most 4 dimensions. */
typedef struct rs_ints {
    int32_t given;
    int32_t ndim;
    int64_t shape[4];
    const int64_t* data;
} rs_ints;
typedef struct rs_reals {
    int32_t given;
    int32_t ndim;
    int64_t shape[4];
    const double* data;
} rs_reals;

typedef struct rs_batch {
    rs_ints input_ids;           /* [B, L], required */
    rs_ints attention_mask;      /* [B, L] of 0 and 1 */
    rs_ints mm_token_type_ids;   /* [B, L]: 0 text, 1 image, 2 video (GLM-V and PaddleOCR-VL need it) */
    rs_ints image_grid_thw;      /* [N, 3], over the whole batch in order */
    rs_ints video_grid_thw;      /* [N, 3] */
    rs_reals second_per_grid_ts; /* [videos] */
} rs_batch;

typedef struct rs_rule rs_rule;
/* A family by name (qwen2-vl, qwen2.5-vl, qwen3-vl, qwen3.5, glm-v, paddleocr-vl, ernie-vl, xd-rope, gemma3, gemma4)
 * or by config.json's model_type (qwen2_5_vl, qwen3_vl_moe, glm4v_moe, ernie4_5_vl_moe, hunyuan_vl, gemma3_text,
 * gemma4_text, ...). The Hub's token ids, merge size 2, 2 tokens per second, ids not checked against a vocabulary. */
RS_API int rs_rule_new(const char* family, rs_rule** out);
RS_API void rs_rule_free(rs_rule* rule);
RS_API const char* rs_rule_family(const rs_rule* rule); /* the canonical name */
RS_API int32_t rs_rule_by_token_types(const rs_rule* rule);
/* A model's own settings (config.json): negative (or 0 for vocab) leaves one as it is. */
RS_API int rs_rule_configure(rs_rule* rule, int64_t image_token_id, int64_t video_token_id, int64_t spatial_merge_size,
                             double tokens_per_second, int64_t vocab_size);
/* XD-RoPE's span tokens (config.json's image_start_token_id, video_start_token_id, video_end_token_id):
 * negative leaves one as it is. */
RS_API int rs_rule_configure_spans(rs_rule* rule, int64_t image_start_token_id, int64_t video_start_token_id, int64_t video_end_token_id);
/* Gemma's markers (config.json's audio_token_id, boi_token_id or boi_token_index, eoi_token_id or eoi_token_index),
 * which name the tokens of a check's report ("boi of image 0"): negative leaves one as it is. */
RS_API int rs_rule_configure_markers(rs_rule* rule, int64_t audio_token_id, int64_t boi_token_id, int64_t eoi_token_id);
RS_API const char* rs_family_names(void); /* "qwen2-vl, qwen2.5-vl, ..." */
/* Rows of the rule's position_ids: 3 (t, h, w), xd-rope's 4 (p, w, h, t), or gemma3's and gemma4's 1 (one sequential
 * position per token, [B, L]). */
RS_API int32_t rs_rule_components(const rs_rule* rule);

/* transformers' get_rope_index: position_ids [C, B, L] (C = rs_rule_components; padding 1) and rope_deltas [B].
 * gemma3 and gemma4: the attended tokens count 0, 1, 2, ... (generate's attention_mask.cumsum(-1) - 1).
 * The capacities are the arrays' lengths in values: RS_INVALID_INPUT, nothing written, when one is below C x B x L
 * or B. */
RS_API int rs_rope_index(const rs_rule* rule, const rs_batch* batch, int64_t* position_ids, int64_t position_capacity, int64_t* rope_deltas,
                         int64_t deltas_capacity);

/* check-positions: the pipeline's position_ids ([3, B, L] or [4, B, L]; xd-rope: its own [4, B, L]; gemma3 and
 * gemma4: [B, L] or [1, B, L], where a 0 after a row's first attended token starts its next packed sequence) and
 * optional rope_deltas ([B] or [B, 1]) against the rule. */
typedef struct rs_check rs_check;
typedef struct rs_sample {
    int64_t row;
    int64_t tokens;      /* attended tokens */
    const char* kind;    /* "none", "1-d", "temporal", "offset", "rope-deltas", "other" */
    const char* words;   /* the kind in one sentence */
    const char* detail;  /* the difference's shape, "" when none */
    int64_t first_token; /* -1 when none */
    int32_t axis;        /* 0 t, 1 h, 2 w, 3 the text row of a [4, B, L] table (xd-rope: 0 p, 1 w, 2 h, 3 t); -1 when none */
    int64_t got, expected;
    const char* segment; /* "text", "image 0", "video 1 frame 3"; "" when none */
    int64_t differing;   /* attended tokens with any axis different */
    int64_t sequences;   /* gemma3, gemma4: packed sequences in the row (position ids that restart at 0); 1 otherwise */
} rs_sample;
RS_API int rs_check_positions(const rs_rule* rule, const rs_batch* batch, const rs_ints* position_ids, const rs_ints* rope_deltas,
                              rs_check** out);
RS_API int64_t rs_check_count(const rs_check* check);
RS_API int rs_check_sample(const rs_check* check, int64_t index, rs_sample* out); /* strings live as long as the check */
RS_API void rs_check_free(rs_check* check);

/* Gemma 4's image_position_ids of one image of height_patches x width_patches patches: max_patches rows of (x, y),
 * the patches row by row (x fastest), then (-1, -1) up to max_patches (max_soft_tokens x pooling_kernel_size^2), as
 * its image processor writes them (a video's frames each have the same). capacity is out's length in values: at
 * least 2 x max_patches (RS_INVALID_INPUT, nothing written, otherwise). */
RS_API int rs_gemma4_patch_positions(int64_t height_patches, int64_t width_patches, int64_t max_patches, int64_t* out, int64_t capacity);

/* ---- built-in schemes ---- */

RS_API int32_t rs_scheme_count(void);
RS_API const char* rs_scheme_name(int32_t index); /* NULL out of range */
RS_API const char* rs_scheme_summary(int32_t index);
RS_API int32_t rs_scheme_components(int32_t index);

typedef struct rs_parameter {
    const char* key;   /* "alpha", "ntk_alpha" */
    const char* type;  /* "number", "choice", "flag", "vector" */
    const char* label; /* the window's words */
    const char* help;
    double default_value; /* number rows */
    double min, max;      /* number and vector rows */
    int32_t open_min;     /* min itself is not valid */
    const char* choices;  /* choice rows: "fixed, auto, code-auto"; "" otherwise */
    const char* schemes;  /* the schemes that read it: "circle, ..." */
} rs_parameter;
RS_API int32_t rs_parameter_count(void);
RS_API int rs_parameter_info(int32_t index, rs_parameter* out);

/* A layout ("text:4,image:3x3,text:5") placed by a built-in scheme with its defaults, then `count` parameters
 * given as text by key: numbers, a choice's name, on/off, "x,y,z", and the rotary box's "theta" and
 * "head_dim". Errors name the parameter. */
typedef struct rs_table rs_table;
RS_API int rs_table_new(const char* layout, const char* scheme, int32_t count, const char* const* keys, const char* const* values,
                        rs_table** out);
/* Positions placed outside the library, as a table for PTD and the prior: what the Python package reads back
 * from the ropescope binary for a Python scheme file, which runs in the binary's bounded worker and never in the
 * caller's process. `positions` is tokens x components, row-major, for every token of the layout;
 * component_names may be NULL (t, h, w for three). allocation: its name and sections as `positions --format json`
 * writes them ("sectioned" [16, 24, 24], "per-pair" with one component per pair, ...), or NULL for the default
 * of that many components. theta and head_dim: the rotary box's. */
RS_API int rs_table_from_positions(const char* layout, const char* label, int32_t components, const char* const* component_names,
                                   int64_t tokens, const double* positions, const char* allocation, const int32_t* sections,
                                   int32_t section_count, double theta, int32_t head_dim, rs_table** out);
RS_API void rs_table_free(rs_table* table);
RS_API int64_t rs_table_tokens(const rs_table* table);
RS_API int32_t rs_table_components(const rs_table* table);
RS_API const char* rs_table_component_name(const rs_table* table, int32_t component);
RS_API int64_t rs_table_blocks(const rs_table* table); /* visual blocks: images and video frames */
RS_API int64_t rs_table_text_tokens(const rs_table* table);
/* tokens x components */
RS_API void rs_table_positions(const rs_table* table, double* out);
/* per token: modality (0 text, 1 image, 2 video), segment, frame, row, col (-1 for text) */
RS_API void rs_table_metadata(const rs_table* table, int32_t* modality, int32_t* segment, int32_t* frame, int32_t* row, int32_t* col);
/* PTD: the mean, per block, per text token (arrays sized rs_table_blocks / rs_table_text_tokens). */
RS_API int rs_table_ptd(const rs_table* table, double* mean, double* per_block, double* per_text_token);
/* The positional prior of one text token (its index among all tokens) over the visual tokens: capacity is
 * per_visual_token's length, at least rs_table_tokens - rs_table_text_tokens (RS_INVALID_INPUT otherwise). */
RS_API int rs_table_prior(const rs_table* table, int64_t text_token, double* per_visual_token, int64_t capacity);

#ifdef __cplusplus
}
#endif

#endif
