#pragma once

namespace headerd::node {

// Each returns the process exit code; argv holds the arguments after the subcommand name.
int cmd_generate(int argc, char** argv);
int cmd_import(int argc, char** argv);
int cmd_export(int argc, char** argv);
int cmd_inspect(int argc, char** argv);
int cmd_verify(int argc, char** argv);
int cmd_freeze(int argc, char** argv);
int cmd_serve(int argc, char** argv);
int cmd_get(int argc, char** argv);

}  // namespace headerd::node
