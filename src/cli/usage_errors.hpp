// Usage errors in ezpz's voice: when CLI11 refuses the arguments, say which word the user typed
// was wrong and what would be right (`-n needs a whole number, e.g. -n 8`), with "did you mean"
// for a misspelt command or option. Read from the CLI tree: the options' names, placeholders
// and validators (ranges, choices, sizes).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/App.hpp>

namespace ezpz::cli {

/// What an option's value must be, read from its definition.
struct ValueFacts {
  std::string placeholder;           ///< as help shows it: N, SECONDS, FILE, WHEN (never a parser type)
  std::vector<std::string> choices;  ///< one of these (CLI::IsMember)
  std::optional<double> min;         ///< a number at least this (CLI::Range, NonNegative)
  std::optional<double> max;
  bool positive = false;  ///< a number above 0 (CLI::PositiveNumber)
  bool number = false;    ///< a number at all (a range, or a numeric placeholder)
  bool whole = false;     ///< a whole number
  bool size = false;      ///< a size with a unit (20G)
};
ValueFacts value_facts(const CLI::Option& opt);
/// A value that `opt` accepts, for "e.g. --fanout 2".
std::string example_value(const CLI::Option& opt);

/// The candidate nearest `typed` (by edit distance, or one it begins), when near enough to be
/// what was meant.
std::optional<std::string> did_you_mean(std::string_view typed, const std::vector<std::string>& candidates);

/// The message for CLI11's refusal `e` of `args` (the user's words after `ezpz`, in order, the
/// trailing command cut off) against `root`, whose subcommand `sub` (null: none) was selected.
std::string explain_usage_error(CLI::App& root, CLI::App* sub, const std::vector<std::string>& args,
                                const CLI::ParseError& e);

/// An option of `sub` given an empty value in `args` ("--dst ''", "--dst="), which CLI11 takes
/// as not given or as 0: refused by name ("--dst needs a PATH, e.g. --dst /tmp/env (got '')").
/// Options for which empty means something (--filesystems: none) are left alone.
std::optional<std::string> empty_value_error(CLI::App& sub, const std::vector<std::string>& args);

}  // namespace ezpz::cli
