#include <cudascope/analysis/cpp_names.h>

#include <cctype>
#include <vector>

namespace cudascope::analysis {
namespace {

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$'; }

// Length of an operator name's symbol part starting at `at` ("()", "<<=", "[]", " new"...).
std::size_t operator_symbol(std::string_view s, std::size_t at) {
  static constexpr std::string_view symbols[] = {"()", "[]", "<<=", ">>=", "<=>", "->*", "<<", ">>", "<=", ">=", "==",
                                                 "!=", "&&", "||", "++", "--", "+=", "-=", "*=", "/=", "%=", "&=",
                                                 "|=", "^=", "->", "<", ">", "+", "-", "*", "/", "%", "&", "|", "^",
                                                 "~", "!", "=", ","};
  for (std::string_view sym : symbols)
    if (s.substr(at, sym.size()) == sym) return sym.size();
  return 0;
}

bool is_qualifier(std::string_view token) {
  return token == "const" || token == "volatile" || token == "&" || token == "&&" || token == "noexcept" ||
         token == "[clone" || token.empty();
}

}  // namespace

bool looks_like_cpp_signature(std::string_view name) {
  if (name.find("::") != std::string_view::npos) return true;
  // An identifier directly followed by '(' or '<': "foo(int)", "Kernel<128>".
  for (std::size_t i = 1; i < name.size(); ++i)
    if ((name[i] == '(' || name[i] == '<') && ident_char(name[i - 1])) return true;
  return false;
}

std::string shorten_cpp_name(std::string_view name) {
  if (!looks_like_cpp_signature(name)) return std::string(name);
  // Pass 1: drop template arguments and parameter lists (any depth), keeping
  // "(anonymous namespace)", operator symbols and lambda names ({lambda(int)#1}).
  std::string out;
  out.reserve(name.size());
  int angle = 0, paren = 0;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (angle == 0 && paren == 0) {
      if (name.substr(i, 8) == "operator" && (i == 0 || !ident_char(name[i - 1])) &&
          (i + 8 >= name.size() || !ident_char(name[i + 8]))) {
        std::size_t n = 8 + operator_symbol(name, i + 8);
        out.append(name.substr(i, n));
        i += n - 1;
        continue;
      }
      if (name.substr(i, 21) == "(anonymous namespace)") {
        out.append("(anonymous namespace)");
        i += 20;
        continue;
      }
      if (c == '{') {  // a lambda or block name: kept whole
        std::size_t depth = 0, j = i;
        for (; j < name.size(); ++j) {
          if (name[j] == '{') ++depth;
          if (name[j] == '}' && --depth == 0) break;
        }
        out.append(name.substr(i, j - i + 1));
        i = j;
        continue;
      }
    }
    if (c == '<' && paren == 0) {
      ++angle;
      continue;
    }
    if (c == '>' && angle > 0 && paren == 0) {
      --angle;
      continue;
    }
    if (c == '(') {
      ++paren;
      continue;
    }
    if (c == ')' && paren > 0) {
      --paren;
      continue;
    }
    if (angle == 0 && paren == 0) out.push_back(c);
  }
  // Pass 2: the last space-separated token that is not a qualifier is the name (the
  // return type and "const" fall away). Spaces inside kept groups do not split.
  std::vector<std::string_view> tokens;
  std::string_view text(out);
  std::size_t start = 0;
  int keep = 0;
  for (std::size_t i = 0; i <= text.size(); ++i) {
    if (i < text.size() && (text[i] == '{' || text[i] == '(')) ++keep;
    if (i < text.size() && (text[i] == '}' || text[i] == ')')) --keep;
    if (i == text.size() || (text[i] == ' ' && keep == 0)) {
      tokens.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  while (!tokens.empty() && is_qualifier(tokens.back())) tokens.pop_back();
  if (tokens.empty()) return std::string(name);
  std::string_view last = tokens.back();
  // "operator new" / "operator delete": the symbol is a word of its own.
  if (tokens.size() >= 2 && tokens[tokens.size() - 2].ends_with("operator")) {
    const std::string_view prev = tokens[tokens.size() - 2];
    return std::string(prev) + " " + std::string(last);
  }
  while (!last.empty() && (last.front() == '*' || last.front() == '&')) last.remove_prefix(1);
  return last.empty() ? std::string(name) : std::string(last);
}

}  // namespace cudascope::analysis
