#include "cli/help_format.hpp"

#include <algorithm>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/usage_errors.hpp"
#include "core/base/strings.hpp"

namespace ezpz::cli {
namespace {

constexpr std::size_t kMaxColumn = 30;  ///< where descriptions start, at most

/// What an option takes, as help shows it: `N`, `tree|greedy`, `[=WHEN]`, `FILE...`; nothing for a flag.
std::string value_part(const CLI::Option& opt) {
  if (opt.get_expected_max() == 0 || opt.get_type_size_max() == 0) {
    return {};  // a flag
  }
  const auto f = value_facts(opt);
  std::string v = f.choices.empty() ? f.placeholder : core::join(f.choices, "|");
  if (opt.get_items_expected_max() > 1) {
    v += "...";
  }
  return opt.get_expected_min() == 0 ? "[=" + v + "]" : v;
}

/// `-n, --nproc N`: the first short and the first long name; the rest are aliases.
std::string names_part(const CLI::Option& opt) {
  std::vector<std::string> shown;
  if (!opt.get_snames().empty()) {
    shown.push_back("-" + opt.get_snames().front());
  }
  if (!opt.get_lnames().empty()) {
    shown.push_back("--" + opt.get_lnames().front());
  }
  const auto value = value_part(opt);
  return core::join(shown, ", ") + (value.empty() ? "" : " " + value);
}

std::string aliases_part(const CLI::Option& opt) {
  std::vector<std::string> more;
  for (std::size_t i = 1; i < opt.get_snames().size(); ++i) {
    more.push_back("-" + opt.get_snames()[i]);
  }
  const auto& longs = opt.get_lnames();
  for (std::size_t i = 1; i < longs.size(); ++i) {
    auto dashed = longs[i];
    std::replace(dashed.begin(), dashed.end(), '_', '-');
    if (dashed == longs[i] || std::find(longs.begin(), longs.end(), dashed) == longs.end()) {
      more.push_back("--" + longs[i]);  // (not torchrun's --x_y beside --x-y)
    }
  }
  return more.empty() ? "" : " (also " + core::join(more, ", ") + ")";
}

/// The footer (notes, examples): its prose (lines that start at column 0, up to one that ends
/// with '.' or ':', a blank line or an indented line) filled anew to the width; indented lines (examples) kept as
/// written, wrapped under their own indentation only when too long.
std::string wrap_footer(const std::string& footer, std::size_t width) {
  std::string out;
  std::string prose;
  const auto flush = [&] {
    if (!prose.empty()) {
      out += wrap(prose, width, 0, 0) + '\n';
      prose.clear();
    }
  };
  std::size_t from = 0;
  const auto text = footer.substr(0, footer.find_last_not_of('\n') + 1);
  while (from <= text.size()) {
    auto end = text.find('\n', from);
    end = end == std::string::npos ? text.size() : end;
    const std::string line = text.substr(from, end - from);
    const auto indent = std::min(line.find_first_not_of(' '), line.size());
    if (indent == 0 && !line.empty()) {
      prose += (prose.empty() ? "" : " ") + line;
      if (line.back() == '.' || line.back() == ':') {  // a sentence that ends its line ends its paragraph
        flush();
      }
    } else {
      flush();
      out += (line.size() <= width ? line
                                   : std::string(indent, ' ') + wrap(line.substr(indent), width, indent, indent + 2)) +
             '\n';
    }
    from = end + 1;
  }
  flush();
  return out;
}

}  // namespace

std::string wrap(std::string_view text, std::size_t width, std::size_t first, std::size_t indent) {
  std::string out;
  std::size_t col = first;
  bool line_empty = true;
  std::size_t at = 0;
  while (at < text.size()) {
    if (text[at] == ' ') {
      ++at;
      continue;
    }
    auto end = text.find(' ', at);
    end = end == std::string_view::npos ? text.size() : end;
    const auto word = text.substr(at, end - at);
    if (!line_empty && col + 1 + word.size() > width) {
      out += '\n' + std::string(indent, ' ');
      col = indent;
      line_empty = true;
    }
    if (!line_empty) {
      out += ' ';
      ++col;
    }
    out += word;
    col += word.size();
    line_empty = false;
    at = end;
  }
  return out;
}

std::string HelpFormatter::row(const std::string& left, const std::string& text, std::size_t column) const {
  std::string out = "  " + left;
  if (text.empty()) {
    return out + '\n';
  }
  if (out.size() + 2 > column) {  // too long to share the line: the text starts below
    out += '\n' + std::string(column, ' ');
  } else {
    out += std::string(column - out.size(), ' ');
  }
  return out + wrap(text, width_, column, column) + '\n';
}

std::string HelpFormatter::usage(const CLI::App& app, const std::string& name) const {
  std::string line = "Usage: " + name;
  if (!app.get_options([](const CLI::Option* o) { return !o->get_positional(); }).empty()) {
    line += " [OPTIONS]";
  }
  if (app.get_parent() == nullptr) {
    line += " COMMAND";
  }
  if (trailing_.count(app.get_name()) != 0) {
    return wrap(line + " -- COMMAND...", width_, 0, 7) + '\n';  // its positional is that command
  }
  for (const auto* p : app.get_options([](const CLI::Option* o) { return o->get_positional(); })) {
    const auto word = core::to_upper(p->get_name(true)) + (p->get_items_expected_max() > 1 ? "..." : "");
    line += " " + (p->get_required() ? word : "[" + word + "]");
  }
  return wrap(line, width_, 0, 7) + '\n';
}

std::string HelpFormatter::options(const CLI::App& app) const {
  std::vector<std::string> groups;
  std::size_t widest = 0;
  for (const auto* opt : app.get_options()) {
    if (opt->get_group().empty()) {
      continue;  // hidden
    }
    const auto heading = opt->get_positional() ? std::string("Arguments") : opt->get_group();
    if (std::find(groups.begin(), groups.end(), heading) == groups.end()) {
      groups.push_back(heading);
    }
    widest = std::max(widest, (opt->get_positional() ? core::to_upper(opt->get_name(true)) : names_part(*opt)).size());
  }
  std::stable_partition(groups.begin(), groups.end(), [](const std::string& g) { return g == "Arguments"; });
  const std::size_t column = std::min({widest + 4, kMaxColumn, width_ / 3});
  std::string out;
  for (const auto& g : groups) {
    out += '\n' + g + ":\n";
    for (const auto* opt : app.get_options()) {
      const bool here = opt->get_positional() ? g == "Arguments" : opt->get_group() == g;
      if (here) {
        out += row(opt->get_positional() ? core::to_upper(opt->get_name(true)) : names_part(*opt),
                   opt->get_description() + aliases_part(*opt), column);
      }
    }
  }
  return out;
}

std::string HelpFormatter::commands(const CLI::App& app) const {
  const auto subs = app.get_subcommands([](const CLI::App* s) { return !s->get_group().empty(); });
  if (subs.empty()) {
    return {};
  }
  std::size_t widest = 0;
  for (const auto* s : subs) {
    widest = std::max(widest, s->get_name().size());
  }
  std::string out = "\nCommands:\n";
  for (const auto* s : subs) {
    out += row(s->get_name(), s->get_description(), std::min({widest + 4, kMaxColumn, width_ / 3}));
  }
  return out;
}

std::string HelpFormatter::make_help(const CLI::App* app, std::string name, CLI::AppFormatMode /*mode*/) const {
  std::string out;
  if (!app->get_description().empty()) {
    out += wrap(app->get_description(), width_, 0, 0) + "\n\n";
  }
  out += usage(*app, name.empty() ? app->get_name() : name);
  out += options(*app);
  out += commands(*app);
  if (!app->get_footer().empty()) {
    out += '\n' + wrap_footer(app->get_footer(), width_);
  }
  return out;
}

}  // namespace ezpz::cli
