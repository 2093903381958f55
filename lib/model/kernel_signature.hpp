#pragma once
// The part of a kernel's name that classifies it (kernel_class.cpp, autocast_ops.cpp).
#include <string>
#include <string_view>

namespace daydream {

/// The name before its parameter list, lower-cased: "void at::native::f<float>(...)" ->
/// "void at::native::f<float>".
std::string kernel_signature(std::string_view name);

}  // namespace daydream
