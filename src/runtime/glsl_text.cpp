// GLSL source text helpers (glsl_text.hpp).
#include "runtime/glsl_text.hpp"

#include <cctype>
#include <sstream>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace gltensor::detail {

namespace {

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Every identifier of `text`, added to `out`.
void identifiers(const std::string& text, std::vector<std::string>& out) {
  for (std::size_t i = 0; i < text.size();) {
    if (ident_char(text[i]) && !std::isdigit(static_cast<unsigned char>(text[i])) &&
        (i == 0 || !ident_char(text[i - 1]))) {
      std::size_t j = i;
      while (j < text.size() && ident_char(text[j])) ++j;
      out.push_back(text.substr(i, j - i));
      i = j;
    } else {
      ++i;
    }
  }
}

}  // namespace

std::string strip_glsl_comments(const std::string& source) {
  std::string code;
  code.reserve(source.size());
  for (std::size_t i = 0; i < source.size(); ++i) {
    if (source.compare(i, 2, "//") == 0) {
      i = source.find('\n', i);
      if (i == std::string::npos) break;
    } else if (source.compare(i, 2, "/*") == 0) {
      i = source.find("*/", i);
      if (i == std::string::npos) break;
      ++i;
      continue;
    }
    code += source[i];
  }
  return code;
}

bool glsl_reaches_loop(const std::string& source) {
  // Comments and the lines that define LOOP itself (common.glsl's two forms) out.
  std::string code;
  {
    std::istringstream in(strip_glsl_comments(source));
    std::string line;
    while (std::getline(in, line)) {
      // "#", "define", "LOOP(", spaces between
      std::size_t k = line.find_first_not_of(" \t");
      bool defines_loop = k != std::string::npos && line[k] == '#';
      if (defines_loop) k = line.find_first_not_of(" \t", k + 1);
      defines_loop = defines_loop && k != std::string::npos && line.compare(k, 6, "define") == 0;
      if (defines_loop) k = line.find_first_not_of(" \t", k + 6);
      defines_loop = defines_loop && k != std::string::npos && line.compare(k, 5, "LOOP(") == 0;
      if (!defines_loop) code += line + "\n";
    }
  }
  // Function bodies at brace depth 0 (a '{' after ')' closing the parameter list of a name) by
  // name; everything else but the functions' names and parameters (globals, macros, struct and
  // block members) is the roots' text.
  std::unordered_map<std::string, std::string> bodies;
  std::string roots;
  int depth = 0;
  std::size_t from = 0;  // start of the roots' text not yet taken
  for (std::size_t i = 0; i < code.size(); ++i) {
    if (code[i] == '{') {
      if (depth == 0) {
        std::size_t k = i;
        while (k > 0 && std::isspace(static_cast<unsigned char>(code[k - 1]))) --k;
        std::string name;
        std::size_t b = 0;  // the name's start
        if (k > 0 && code[k - 1] == ')') {
          int paren = 0;
          std::size_t q = k;
          while (q > 0) {
            --q;
            if (code[q] == ')') ++paren;
            if (code[q] == '(' && --paren == 0) break;
          }
          std::size_t e = q;
          while (e > 0 && std::isspace(static_cast<unsigned char>(code[e - 1]))) --e;
          b = e;
          while (b > 0 && ident_char(code[b - 1])) --b;
          name = code.substr(b, e - b);
        }
        if (name == "for" || name == "if" || name == "while" || name == "switch") return true;  // a macro's
        if (!name.empty() && name != "layout") {
          // the body, to its matching brace
          int d = 0;
          std::size_t j = i;
          for (; j < code.size(); ++j) {
            if (code[j] == '{') ++d;
            if (code[j] == '}' && --d == 0) break;
          }
          if (j == code.size()) return true;     // unbalanced
          roots += code.substr(from, b - from);  // not the name and parameters
          bodies[name] += code.substr(i, j + 1 - i);
          i = j;
          from = j + 1;
          continue;
        }
      }
      ++depth;
    } else if (code[i] == '}') {
      if (--depth < 0) return true;
    }
  }
  if (depth != 0 || !bodies.count("main")) return true;
  // A body under a macro's name (a function whose name a macro writes) is not delimited by name.
  {
    std::istringstream in(code);
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream words(line);
      std::string w, name;
      words >> w;
      if (w == "#")
        words >> w;
      else if (!w.empty() && w[0] == '#')
        w.erase(0, 1);
      if (w != "define" || !(words >> name)) continue;
      name = name.substr(0, name.find('('));
      if (bodies.count(name)) return true;
    }
  }
  roots += code.substr(from);
  // Names reached from main and the roots; LOOP among them or in a reached body.
  std::vector<std::string> todo;
  identifiers(roots, todo);
  todo.push_back("main");
  std::unordered_set<std::string> seen;
  while (!todo.empty()) {
    const std::string n = todo.back();
    todo.pop_back();
    if (n == "LOOP") return true;
    if (!seen.insert(n).second) continue;
    if (auto it = bodies.find(n); it != bodies.end()) identifiers(it->second, todo);
  }
  return false;
}

std::string glsl_macro_list(int n, const char* pre) {
  std::string l;
  for (int i = 0; i < n; ++i) l += std::string("X(") + pre + std::to_string(i) + ") ";
  return l;
}

}  // namespace gltensor::detail
