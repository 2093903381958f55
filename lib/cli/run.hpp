#pragma once
// The command line as a function, for the `daydream` program and `python -m daydream`.

namespace daydream::cli {

/// The exit statuses of `daydream`.
constexpr int kExitDone = 0;
/// Bad input or a refused request: a daydream::Error, a usage error, a path that cannot be read
/// (missing, a symlink loop, no permission), an input too large for memory. Message on stderr.
constexpr int kExitBadInput = 1;
/// A bug in daydream (any other exception); the message asks for a report.
constexpr int kExitBug = 2;

/// Parses argv (argv[0] is the program name) and runs one command: its output on stdout, messages
/// and errors on stderr. Returns kExitDone, kExitBadInput or kExitBug. Never exits the process.
int run(int argc, char** argv);

}  // namespace daydream::cli
