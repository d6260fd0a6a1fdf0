#include "cli/usage_errors.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>

#include <CLI/CLI.hpp>

#include "core/base/strings.hpp"

namespace ezpz::cli {
namespace {

/// core::split, as strings (the text split is often a temporary).
std::vector<std::string> split(std::string_view text, char sep) {
  const auto views = core::split(text, sep);
  return {views.begin(), views.end()};
}

std::optional<double> number_of(const std::string& text) {
  if (text.empty()) {
    return std::nullopt;
  }
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  return end != nullptr && *end == '\0' && std::isfinite(v) ? std::optional(v) : std::nullopt;
}

std::string number_text(double v) {
  std::string s = std::to_string(v);
  s.erase(s.find_last_not_of('0') + 1);
  if (!s.empty() && s.back() == '.') {
    s.pop_back();
  }
  return s;
}

/// A validator's part of a type name: "{a,b}", "INT in [1 - 64]", "NONNEGATIVE", "SIZE [...]".
void read_validator(const std::string& part, ValueFacts& f) {
  if (core::starts_with(part, "{") && part.size() >= 2) {
    f.choices = split(part.substr(1, part.size() - 2), ',');
  } else if (const auto in = part.find(" in ["); in != std::string::npos) {
    f.number = true;
    f.whole = core::starts_with(part, "INT") || core::starts_with(part, "UINT");
    const auto bounds = split(part.substr(in + 5, part.find(']') - in - 5), ' ');  // "1", "-", "64"
    if (bounds.size() == 3) {
      f.min = number_of(bounds[0]);
      f.max = number_of(bounds[2]);
    }
  } else if (part == "NONNEGATIVE") {
    f.number = true;
    f.min = 0;
  } else if (part == "POSITIVE") {
    f.number = true;
    f.positive = true;
  } else if (core::starts_with(part, "SIZE")) {
    f.size = true;
  }
}

bool is_path_placeholder(const std::string& p) {
  return p == "FILE" || p == "PATH" || p == "DIR" || p == "SRC";
}

/// What the value must be, for "-n needs a whole number".
std::string what_it_needs(const ValueFacts& f) {
  if (!f.choices.empty()) {
    return "one of " + core::join(f.choices, ", ");
  }
  if (f.size) {
    return "a size such as 20G, 512M or 1T";
  }
  if (f.number) {
    return f.placeholder == "SECONDS" || f.placeholder == "S" ? "a number of seconds"
           : f.whole                                          ? "a whole number"
                                                              : "a number";
  }
  return is_path_placeholder(f.placeholder) ? "a path" : "a value (" + f.placeholder + ")";
}

/// Why `value` is not acceptable to `opt`, or nothing when it is.
std::optional<std::string> value_problem(CLI::Option& opt, const std::string& value) {
  const auto f = value_facts(opt);
  if (f.number) {
    const auto v = number_of(value);
    if (!v || (f.whole && std::floor(*v) != *v)) {
      return "needs " + what_it_needs(f);
    }
    if (f.whole && std::abs(*v) > 2147483647.0) {
      return "is too large a number";  // (CLI11's "Could not convert")
    }
    if ((f.min && *v < *f.min) || (f.max && *v > *f.max) || (f.positive && *v <= 0)) {
      if (f.min && f.max) {
        return "must be between " + number_text(*f.min) + " and " + number_text(*f.max);
      }
      return f.positive ? "must be above 0" : "must be at least " + number_text(f.min.value_or(0));
    }
  }
  if (!f.choices.empty() && std::find(f.choices.begin(), f.choices.end(), value) == f.choices.end()) {
    return "must be " + what_it_needs(f);
  }
  for (int i = 0;; ++i) {  // anything else the definition checks (a size's unit)
    CLI::Validator* check = nullptr;
    try {
      check = opt.get_validator(i);
    } catch (const CLI::OptionNotFound&) {
      break;
    }
    auto copy = value;
    try {
      if (!(*check)(copy).empty()) {
        return "needs " + what_it_needs(f);
      }
    } catch (const CLI::Error&) {  // a transforming check (a size's unit) throws
      return "needs " + what_it_needs(f);
    }
  }
  return std::nullopt;
}

CLI::Option* find_option(CLI::App& app, const std::string& name) {
  for (auto* opt : app.get_options([](CLI::Option*) { return true; })) {
    if (!opt->get_positional() && opt->check_name(name)) {
      return opt;
    }
  }
  return nullptr;
}

/// One option as the user wrote it, and its value.
struct Use {
  std::string typed;
  CLI::Option* opt = nullptr;
  std::optional<std::string> value;  ///< nullopt: none given (for an option that takes one)
};

struct Scan {
  std::vector<Use> uses;
  std::vector<std::string> unknown;  ///< option words that are no option of the command
  std::vector<std::string> loose;    ///< the rest: positionals
};

bool looks_like_option(const std::string& t) {
  return t.size() >= 2 && t[0] == '-' && !number_of(t);
}

/// The command's words (after its name) matched to its options, as CLI11 would.
Scan scan(CLI::App& root, CLI::App& sub, const std::vector<std::string>& words) {
  Scan s;
  const auto known = [&](const std::string& t) {
    return t == "--" || (looks_like_option(t) && (find_option(sub, t.substr(0, t.find('='))) != nullptr ||
                                                  find_option(root, t.substr(0, t.find('='))) != nullptr));
  };
  for (std::size_t i = 0; i < words.size() && words[i] != "--"; ++i) {
    const auto& t = words[i];
    if (!looks_like_option(t)) {
      s.loose.push_back(t);
      continue;
    }
    const bool is_long = core::starts_with(t, "--");
    const auto name = is_long ? t.substr(0, t.find('=')) : t.substr(0, 2);
    std::optional<std::string> value;
    if (is_long && t.find('=') != std::string::npos) {
      value = t.substr(t.find('=') + 1);
    } else if (!is_long && t.size() > 2) {
      value = t.substr(2);
    }
    auto* opt = find_option(sub, name);
    opt = opt != nullptr ? opt : find_option(root, name);
    if (opt == nullptr) {
      s.unknown.push_back(name);
      continue;
    }
    const bool takes_value = opt->get_type_size_min() > 0 && opt->get_expected_min() > 0;
    if (takes_value && !value && i + 1 < words.size() && !known(words[i + 1])) {
      value = words[++i];
    }
    if (takes_value) {
      s.uses.push_back({name, opt, value});
    }
  }
  return s;
}

std::vector<std::string> visible_commands(CLI::App& root) {
  std::vector<std::string> names;
  for (const auto* sub : root.get_subcommands([](const CLI::App* a) { return !a->get_group().empty(); })) {
    names.push_back(sub->get_name());
  }
  return names;
}

std::vector<std::string> option_names(CLI::App& app) {
  std::vector<std::string> names;
  for (const auto* opt : app.get_options()) {
    for (const auto& n : opt->get_lnames()) {
      names.push_back("--" + n);
    }
    for (const auto& n : opt->get_snames()) {
      names.push_back("-" + n);
    }
  }
  return names;
}

std::string suggestion(std::string_view typed, const std::vector<std::string>& candidates) {
  const auto near = did_you_mean(typed, candidates);
  return near ? " (did you mean '" + *near + "'?)" : "";
}

/// The first value the command's options or positionals refuse, said as typed.
std::optional<std::string> refused_value(CLI::App& sub, const Scan& s, const std::string& command) {
  for (const auto& u : s.uses) {
    if (!u.value) {
      return u.typed + " needs " + what_it_needs(value_facts(*u.opt)) + ", e.g. " + u.typed + " " +
             example_value(*u.opt);
    }
    if (const auto why = value_problem(*u.opt, *u.value)) {
      return u.typed + " " + *why + ", e.g. " + u.typed + " " + example_value(*u.opt) + " (got '" + *u.value + "')";
    }
  }
  auto positionals = sub.get_options([](CLI::Option* o) { return o->get_positional(); });
  for (std::size_t k = 0; k < s.loose.size() && k < positionals.size(); ++k) {
    if (const auto why = value_problem(*positionals[k], s.loose[k])) {
      return value_facts(*positionals[k]).placeholder + " " + *why + ", e.g. " + command + " " +
             example_value(*positionals[k]) + " (got '" + s.loose[k] + "')";
    }
  }
  return std::nullopt;
}

/// A one-value option given more than once (-N 2 ... --nodes 3), said with both as typed.
std::optional<std::string> given_twice(const Scan& s) {
  for (std::size_t i = 0; i < s.uses.size(); ++i) {
    const auto* opt = s.uses[i].opt;
    if (opt->get_items_expected_max() != 1 || opt->get_multi_option_policy() != CLI::MultiOptionPolicy::Throw) {
      continue;
    }
    for (std::size_t k = i + 1; k < s.uses.size(); ++k) {
      if (s.uses[k].opt == opt) {
        const auto& a = s.uses[i];
        const auto& b = s.uses[k];
        return a.typed + " " + a.value.value_or("") + " and " + b.typed + " " + b.value.value_or("") + " both set " +
               opt->get_name() + ": give it once";
      }
    }
  }
  return std::nullopt;
}

}  // namespace

ValueFacts value_facts(const CLI::Option& opt) {
  static const std::map<std::string, std::string, std::less<>> kParserTypes = {
      {"TEXT", "VALUE"}, {"INT", "N"}, {"UINT", "N"}, {"FLOAT", "NUMBER"}};
  ValueFacts f;
  const auto parts = split(opt.get_type_name(), ':');
  const auto plain = kParserTypes.find(parts.front());
  f.placeholder = plain != kParserTypes.end() ? plain->second : parts.front();
  if (f.placeholder.empty() || (opt.get_positional() && plain != kParserTypes.end())) {
    f.placeholder = opt.get_positional() ? core::to_upper(opt.get_name()) : "VALUE";
  }
  for (std::size_t i = 1; i < parts.size(); ++i) {
    read_validator(parts[i], f);
  }
  if (f.placeholder == "N" || f.placeholder == "SECONDS" || f.placeholder == "S" || f.placeholder == "F" ||
      f.placeholder == "NUMBER") {
    f.number = true;
    f.whole = f.whole || f.placeholder == "N" || parts.front() == "INT" || parts.front() == "UINT";
  }
  return f;
}

std::string example_value(const CLI::Option& opt) {
  static const std::map<std::string, std::string, std::less<>> kByName = {
      {"dst", "/tmp/env"},     {"src", "./venv"},     {"hostfile", "nodes.txt"}, {"machine", "polaris"},
      {"ssh-command", "ssh"},  {"key", "loss"},       {"name", "my-job"},        {"account", "my-project"},
      {"queue", "debug"},      {"time", "01:00:00"},  {"output", "env.tar.zst"}, {"signal", "TERM"},
      {"config", "ezpz.toml"}, {"cpu-bind", "depth"}, {"source", "./venv"},      {"file", "history.jsonl"}};
  const auto f = value_facts(opt);
  if (!f.choices.empty()) {
    return f.choices.front();
  }
  if (f.size) {
    return "20G";
  }
  if (f.number) {
    double v = f.placeholder == "SECONDS" || f.placeholder == "S" ? 30 : f.placeholder == "F" ? 0.5 : 8;
    v = f.max ? std::min(v, *f.max) : v;
    v = f.min ? std::max(v, *f.min) : v;
    return number_text(f.positive && v <= 0 ? 1 : v);
  }
  const auto& names = opt.get_lnames();
  const auto it = kByName.find(names.empty() ? opt.get_name() : names.front());
  return it != kByName.end() ? it->second : f.placeholder;
}

std::optional<std::string> did_you_mean(std::string_view typed, const std::vector<std::string>& candidates) {
  std::optional<std::string> best;
  if (typed.size() < 3) {
    return best;  // -x is no typo of -h
  }
  std::size_t best_d = std::max<std::size_t>(1, typed.size() / 3) + 1;
  for (const auto& c : candidates) {
    std::vector<std::size_t> row(c.size() + 1);
    for (std::size_t j = 0; j <= c.size(); ++j) {
      row[j] = j;
    }
    for (std::size_t i = 1; i <= typed.size(); ++i) {
      std::size_t diag = row[0];
      row[0] = i;
      for (std::size_t j = 1; j <= c.size(); ++j) {
        const std::size_t up = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (typed[i - 1] == c[j - 1] ? 0 : 1)});
        diag = up;
      }
    }
    const bool prefix = typed.size() >= 4 && core::starts_with(c, typed);
    const std::size_t d = prefix ? 1 : row[c.size()];
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

std::string explain_usage_error(CLI::App& root, CLI::App* sub, const std::vector<std::string>& args,
                                const CLI::ParseError& e) {
  std::size_t at = 0;  // the command word: the first word that is not a global flag or its value
  while (at < args.size() && looks_like_option(args[at]) && find_option(root, args[at].substr(0, args[at].find('=')))) {
    at += args[at] == "--color" ? 2 : 1;
  }
  if (at < args.size() && looks_like_option(args[at])) {
    return "unknown option '" + args[at] + "' for ezpz" + suggestion(args[at], option_names(root));
  }
  if (sub == nullptr) {
    if (auto refused = refused_value(root, scan(root, root, args), "ezpz")) {
      return *refused;  // a global option's value (--color)
    }
    return at < args.size() ? "unknown command '" + args[at] + "'" + suggestion(args[at], visible_commands(root))
                            : e.what();
  }
  const std::string command = "ezpz " + sub->get_name();
  const auto s =
      scan(root, *sub, {args.begin() + static_cast<std::ptrdiff_t>(std::min(at + 1, args.size())), args.end()});
  if (!s.unknown.empty()) {
    return "unknown option '" + s.unknown.front() + "' for '" + command + "'" +
           suggestion(s.unknown.front(), option_names(*sub));
  }
  if (auto refused = refused_value(*sub, s, command)) {
    return *refused;
  }
  if (auto twice = given_twice(s)) {
    return *twice;
  }
  for (const auto* opt : sub->get_options()) {
    if (opt->get_required() && opt->count() == 0) {
      const auto f = value_facts(*opt);
      return opt->get_positional()
                 ? command + " needs " + f.placeholder + ", e.g. " + command + " " + example_value(*opt)
                 : command + " needs " + opt->get_name() + " " + f.placeholder;
    }
  }
  const auto positionals = sub->get_options([](CLI::Option* o) { return o->get_positional(); });
  const bool takes_many = std::any_of(positionals.begin(), positionals.end(),
                                      [](const CLI::Option* o) { return o->get_items_expected_max() > 1; });
  if (!takes_many && s.loose.size() > positionals.size()) {
    return "unexpected argument '" + s.loose[positionals.size()] + "' for '" + command + "'" +
           (positionals.empty() ? " (it takes no positional arguments)" : "");
  }
  return e.what();
}

std::optional<std::string> empty_value_error(CLI::App& sub, const std::vector<std::string>& args) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const auto& a = args[i];
    if (!looks_like_option(a)) {
      continue;
    }
    const auto eq = a.find('=');
    const auto name = a.substr(0, eq);
    auto* opt = find_option(sub, name);
    if (opt == nullptr || opt->get_type_size() == 0 || opt->get_expected_min() == 0 || name == "--filesystems") {
      continue;  // a flag, an optional value, or one where empty means none
    }
    const bool empty = eq != std::string::npos ? eq + 1 == a.size() : i + 1 < args.size() && args[i + 1].empty();
    if (empty) {
      return name + " needs " + what_it_needs(value_facts(*opt)) + ", e.g. " + name + " " + example_value(*opt) +
             " (got ''): give one, or leave " + name + " out";
    }
  }
  return std::nullopt;
}

}  // namespace ezpz::cli
