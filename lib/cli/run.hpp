#pragma once
// The command line as a function, for the `daydream` program and `python -m daydream`.

namespace daydream::cli {

/// Parses argv (argv[0] is the program name) and runs one command: its output on stdout, messages
/// and errors on stderr. Returns the exit status: 0 done, 1 an error in the input or the
/// arguments (daydream::Error, a usage error), 2 an internal error. Never exits the process.
int run(int argc, char** argv);

}  // namespace daydream::cli
