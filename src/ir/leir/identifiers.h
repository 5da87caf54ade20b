// Names and free text of LEIR programs, checked in one place.
//
// Code generators paste tensor names, loop variables and the program name into C++, CUDA and
// Python source, so whatever a program carries there must be an identifier of a known shape; every
// reader (the text and JSON forms, ONNX import, the Python bindings), the validator and every
// code generator check names with these functions (the generators as defence in depth, for
// programs built in C++ without a reader).
//
//   tensor name    [A-Z][A-Za-z0-9]*                    LEIR.md §2 NAME
//   loop variable  [a-z][a-z0-9]*                       LEIR.md §2 IVAR
//   program name   [A-Za-z0-9_][A-Za-z0-9_.-]*, at most 128 characters; empty = unnamed (workload
//                  names such as "gemm_multiply_leakyrelu", model file stems such as "resnet-18.v2")
//   alias          the original name of a known tensor (e.g. an ONNX graph name "/blocks.0/MatMul"):
//                  UTF-8 text of at most 1024 bytes without control characters. Free text: no code
//                  generator prints it; the text form writes it as a JSON string literal.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "ir/leir/ast.h"

namespace steptp::leir {

inline constexpr size_t kMaxProgramNameLength = 128;
inline constexpr size_t kMaxAliasBytes = 1024;

bool is_tensor_name(std::string_view s);
bool is_loop_var(std::string_view s);
bool is_program_name(std::string_view s);  // non-empty and of the documented set
bool is_c_identifier(std::string_view s);  // [A-Za-z_][A-Za-z0-9_]*: names generators choose (CUDA entry points)
// Why `alias` is not acceptable (nullopt: it is). The empty alias means "none" and is fine.
std::optional<std::string> alias_problem(std::string_view alias);

// `text` as a JSON string literal (escapes, invalid UTF-8 replaced), cut to about 60 bytes: how
// error messages show untrusted text, so that it cannot forge lines of a diagnostic.
std::string quote_text(std::string_view text);

// Throw LeirError(file, loc) naming `what` (e.g. "tensor name", "\"name\" of the program"), the
// offending text and what was expected. The program name may be empty.
void require_tensor_name(std::string_view s, std::string_view what, const std::string& file, SourceLoc loc);
void require_loop_var(std::string_view s, std::string_view what, const std::string& file, SourceLoc loc);
void require_program_name(std::string_view s, std::string_view what, const std::string& file, SourceLoc loc);
void require_alias(std::string_view s, std::string_view what, const std::string& file, SourceLoc loc);

// A program name from a file path (the text form's and the ONNX importer's default): the stem with
// every character outside the program-name set replaced by '_', cut to the maximum length; empty
// when the stem is.
std::string program_name_from_path(const std::string& path);

// Every name `p` carries: the program name, known tensor names and aliases, the tensor of every
// access and every loop variable (bound or used). Throws the first violation as a LeirError at its
// source location.
void check_names(const Program& p);

}  // namespace steptp::leir
