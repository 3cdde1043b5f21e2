#include "app/lessons/expectation.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <limits>
#include <stdexcept>

namespace servescope::lessons {

// A node of the parsed condition. Kinds: a number, a name, a unary operator (`-`, `not`), a
// binary operator (arithmetic, comparison, and/or), a call (within, clearly_greater).
struct Expression {
  enum class Kind { kNumber, kName, kUnary, kBinary, kCall };
  Kind kind = Kind::kNumber;
  double number = 0.0;
  NameRef name;
  std::string op;  // the operator or the function's name
  std::vector<std::shared_ptr<const Expression>> args;
};

namespace {

using Node = std::shared_ptr<const Expression>;

// The functions a condition may call, with their argument counts.
struct Function {
  std::string_view name;
  size_t arity;
};
constexpr Function kFunctions[] = {{"within", 3}, {"clearly_greater", 2}, {"inside_noise", 2}};

bool is_comparison(std::string_view op) {
  return op == "<" || op == "<=" || op == ">" || op == ">=" || op == "==" || op == "!=";
}

class SyntaxError : public std::runtime_error {
 public:
  SyntaxError(const std::string& what, size_t at)
      : std::runtime_error(what + " at column " + std::to_string(at + 1)) {}
};

// Recursive descent over the text; one token of lookahead, read straight from the characters.
//   or := and ('or' and)* ; and := not ('and' not)* ; not := 'not' not | comparison
//   comparison := sum (CMP sum)? ; sum := product (('+'|'-') product)*
//   product := unary (('*'|'/') unary)* ; unary := '-' unary | primary
//   primary := NUMBER | NAME | steps.ID.NAME | FUNCTION '(' or (',' or)* ')' | '(' or ')'
class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Node parse() {
    Node root = disjunction();
    skip_space();
    if (pos_ < text_.size()) fail("unexpected '" + std::string(1, text_[pos_]) + "'");
    return root;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw SyntaxError(what, pos_); }

  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }

  static bool word_char(char c) {
    return std::islower(static_cast<unsigned char>(c)) ||
           std::isdigit(static_cast<unsigned char>(c)) || c == '_';
  }

  // The word at the cursor ([a-z_][a-z0-9_]*), not consumed; empty when there is none.
  std::string_view peek_word() {
    skip_space();
    size_t end = pos_;
    if (end < text_.size() && (std::islower(static_cast<unsigned char>(text_[end])) ||
                               text_[end] == '_')) {
      while (end < text_.size() && word_char(text_[end])) ++end;
    }
    return text_.substr(pos_, end - pos_);
  }

  bool accept_word(std::string_view word) {
    if (peek_word() != word) return false;
    pos_ += word.size();
    return true;
  }

  bool accept(std::string_view symbol) {
    skip_space();
    if (text_.substr(pos_, symbol.size()) != symbol) return false;
    pos_ += symbol.size();
    return true;
  }

  void expect(std::string_view symbol) {
    if (!accept(symbol)) fail("expected '" + std::string(symbol) + "'");
  }

  static Node make(Expression e) { return std::make_shared<const Expression>(std::move(e)); }

  static Node binary(std::string op, Node left, Node right) {
    Expression e;
    e.kind = Expression::Kind::kBinary;
    e.op = std::move(op);
    e.args = {std::move(left), std::move(right)};
    return make(std::move(e));
  }

  static Node unary(std::string op, Node operand) {
    Expression e;
    e.kind = Expression::Kind::kUnary;
    e.op = std::move(op);
    e.args = {std::move(operand)};
    return make(std::move(e));
  }

  Node disjunction() {
    Node left = conjunction();
    while (accept_word("or")) left = binary("or", left, conjunction());
    return left;
  }

  Node conjunction() {
    Node left = negation();
    while (accept_word("and")) left = binary("and", left, negation());
    return left;
  }

  Node negation() {
    if (accept_word("not")) return unary("not", negation());
    return comparison();
  }

  Node comparison() {
    Node left = sum();
    for (const char* op : {"<=", ">=", "==", "!=", "<", ">"}) {
      if (accept(op)) {
        Node right = sum();
        skip_space();
        for (const char* again : {"<", ">", "=", "!"}) {
          if (accept(again)) fail("comparisons do not chain; join them with 'and'");
        }
        return binary(op, left, right);
      }
    }
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == '=') fail("'=' is not a comparison; write '=='");
    return left;
  }

  // One level of left-associative operators: operand (op operand)*.
  Node chain(Node (Parser::*operand)(), std::initializer_list<const char*> ops) {
    Node left = (this->*operand)();
    for (;;) {
      const auto* op = std::find_if(ops.begin(), ops.end(), [&](const char* o) { return accept(o); });
      if (op == ops.end()) return left;
      left = binary(*op, left, (this->*operand)());
    }
  }

  Node sum() { return chain(&Parser::product, {"+", "-"}); }
  Node product() { return chain(&Parser::sign, {"*", "/"}); }

  Node sign() {
    if (accept("-")) return unary("-", sign());
    return primary();
  }

  Node number() {
    double value = 0.0;
    const char* first = text_.data() + pos_;
    const auto [end, error] = std::from_chars(first, text_.data() + text_.size(), value);
    if (error != std::errc()) fail("a number cannot be read");
    pos_ += static_cast<size_t>(end - first);
    Expression e;
    e.number = value;
    return make(std::move(e));
  }

  // steps.<step-id>.<measure>, after the word `steps`.
  Node step_name() {
    expect(".");
    const size_t start = pos_;
    while (pos_ < text_.size() && (std::islower(static_cast<unsigned char>(text_[pos_])) ||
                                   std::isdigit(static_cast<unsigned char>(text_[pos_])) ||
                                   text_[pos_] == '-')) {
      ++pos_;
    }
    if (pos_ == start) fail("expected a step id after 'steps.'");
    Expression e;
    e.kind = Expression::Kind::kName;
    e.name.step = std::string(text_.substr(start, pos_ - start));
    if (pos_ >= text_.size() || text_[pos_] != '.') fail("expected '.' and a measure after the step id");
    ++pos_;
    const std::string_view measure = peek_word();
    if (measure.empty()) fail("expected a measure name");
    pos_ += measure.size();
    e.name.measure = std::string(measure);
    return make(std::move(e));
  }

  Node call(std::string_view name) {
    const auto* f = std::find_if(std::begin(kFunctions), std::end(kFunctions),
                                 [&](const Function& fn) { return fn.name == name; });
    Expression e;
    e.kind = Expression::Kind::kCall;
    e.op = std::string(name);
    expect("(");
    e.args.push_back(disjunction());
    while (accept(",")) e.args.push_back(disjunction());
    expect(")");
    if (e.args.size() != f->arity) {
      fail(e.op + " takes " + std::to_string(f->arity) + " arguments, not " +
           std::to_string(e.args.size()));
    }
    return make(std::move(e));
  }

  Node primary() {
    skip_space();
    if (pos_ >= text_.size()) fail("the condition ends too early");
    const char c = text_[pos_];
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') return number();
    if (accept("(")) {
      Node inner = disjunction();
      expect(")");
      return inner;
    }
    const std::string_view word = peek_word();
    if (word.empty()) fail("unexpected '" + std::string(1, c) + "'");
    if (word == "and" || word == "or" || word == "not") fail("'" + std::string(word) + "' needs a value before it");
    pos_ += word.size();
    if (word == "steps") return step_name();
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == '(') {
      const bool known = std::any_of(std::begin(kFunctions), std::end(kFunctions),
                                     [&](const Function& fn) { return fn.name == word; });
      if (!known) {
        fail("'" + std::string(word) +
             "' is not a function; use within, clearly_greater or inside_noise");
      }
      return call(word);
    }
    Expression e;
    e.kind = Expression::Kind::kName;
    e.name.measure = std::string(word);
    if (pos_ < text_.size() && text_[pos_] == '.') {  // <kept>.<measure>
      ++pos_;
      const std::string_view measure = peek_word();
      if (measure.empty()) fail("expected a measure name after '" + std::string(word) + ".'");
      pos_ += measure.size();
      e.name.kept = std::move(e.name.measure);
      e.name.measure = std::string(measure);
    }
    return make(std::move(e));
  }

  std::string_view text_;
  size_t pos_ = 0;
};

void collect_names(const Expression& e, std::vector<NameRef>& out) {
  if (e.kind == Expression::Kind::kName) out.push_back(e.name);
  for (const Node& arg : e.args) collect_names(*arg, out);
}

// --- evaluation ---------------------------------------------------------------------------

// A value with the spread of the runs behind it (interval arithmetic keeps low <= mid <= high
// for + and -, and the extremes of the four corners for * and /). Truth: 1 or 0, no spread.
struct Value {
  double mid = 0.0;
  double low = 0.0;
  double high = 0.0;
};

// A name with no measured value: the condition cannot be checked.
struct Unmeasured {
  std::string name;
};

class EvaluationError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

Value exact(double v) { return {v, v, v}; }
Value truth(bool b) { return exact(b ? 1.0 : 0.0); }
bool is_true(const Value& v) { return v.mid != 0.0; }

Value corners(const Value& a, const Value& b, double mid, double (*op)(double, double)) {
  const double c[] = {op(a.low, b.low), op(a.low, b.high), op(a.high, b.low), op(a.high, b.high)};
  return {mid, *std::min_element(std::begin(c), std::end(c)),
          *std::max_element(std::begin(c), std::end(c))};
}

// == and != allow for the rounding of computed figures (a byte count times 2 is exact, a
// product of a rate and a time may not be).
bool same(double a, double b) {
  return std::fabs(a - b) <= 1e-9 * std::max({std::fabs(a), std::fabs(b), 1.0});
}

class Evaluator {
 public:
  explicit Evaluator(const ExpectationInputs& inputs) : inputs_(inputs) {}

  Value operator()(const Expression& e) const {
    switch (e.kind) {
      case Expression::Kind::kNumber:
        return exact(e.number);
      case Expression::Kind::kName:
        return lookup(e.name);
      case Expression::Kind::kUnary: {
        const Value v = (*this)(*e.args[0]);
        if (e.op == "not") return truth(!is_true(v));
        return {-v.mid, -v.high, -v.low};
      }
      case Expression::Kind::kBinary:
        return binary(e);
      case Expression::Kind::kCall:
        return call(e);
    }
    return {};
  }

 private:
  Value lookup(const NameRef& name) const {
    const StepMeasures* measures = inputs_.current;
    if (!name.step.empty()) {
      measures = nullptr;
      if (inputs_.earlier) {
        const auto it = inputs_.earlier->find(name.step);
        if (it != inputs_.earlier->end()) measures = &it->second;
      }
    }
    if (measures) {
      const auto it = measures->find(name.step.empty() ? name.written() : name.measure);
      if (it != measures->end()) return {it->second.median, it->second.low, it->second.high};
    }
    throw Unmeasured{name.written()};
  }

  Value binary(const Expression& e) const {
    const std::string& op = e.op;
    if (op == "and") return truth(is_true((*this)(*e.args[0])) && is_true((*this)(*e.args[1])));
    if (op == "or") return truth(is_true((*this)(*e.args[0])) || is_true((*this)(*e.args[1])));
    const Value a = (*this)(*e.args[0]);
    const Value b = (*this)(*e.args[1]);
    if (op == "+") return {a.mid + b.mid, a.low + b.low, a.high + b.high};
    if (op == "-") return {a.mid - b.mid, a.low - b.high, a.high - b.low};
    if (op == "*") return corners(a, b, a.mid * b.mid, [](double x, double y) { return x * y; });
    if (op == "/") {
      if (b.mid == 0.0) throw EvaluationError("division by zero");
      if (b.low <= 0.0 && b.high >= 0.0) {  // a divisor whose spread holds zero bounds nothing
        const double inf = std::numeric_limits<double>::infinity();
        return {a.mid / b.mid, -inf, inf};
      }
      return corners(a, b, a.mid / b.mid, [](double x, double y) { return x / y; });
    }
    if (op == "<") return truth(a.mid < b.mid);
    if (op == "<=") return truth(a.mid <= b.mid);
    if (op == ">") return truth(a.mid > b.mid);
    if (op == ">=") return truth(a.mid >= b.mid);
    if (op == "==") return truth(same(a.mid, b.mid));
    if (op == "!=") return truth(!same(a.mid, b.mid));
    throw EvaluationError("unknown operator " + op);
  }

  Value call(const Expression& e) const {
    const Value a = (*this)(*e.args[0]);
    const Value b = (*this)(*e.args[1]);
    if (e.op == "within") {
      const Value rel = (*this)(*e.args[2]);
      return truth(std::fabs(a.mid - b.mid) <= rel.mid * std::fabs(b.mid));
    }
    // clearly_greater: every run of a above every run of b (the ranges do not overlap).
    if (e.op == "clearly_greater") return truth(a.low > b.high);
    return truth(a.low <= b.high && b.low <= a.high);  // inside_noise: the ranges overlap
  }

  const ExpectationInputs& inputs_;
};

std::string figure(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", v);
  return text;
}

std::string figure(const Value& v) {
  if (v.low == v.high) return figure(v.mid);
  return figure(v.mid) + " (" + figure(v.low) + ".." + figure(v.high) + ")";
}

// The figures behind a condition, for the report: its two sides (or arguments) evaluated.
std::string describe(const Expression& e, const Evaluator& eval) {
  if (e.kind == Expression::Kind::kUnary && e.op == "not") return "not " + describe(*e.args[0], eval);
  if (e.kind == Expression::Kind::kBinary && (e.op == "and" || e.op == "or")) {
    return describe(*e.args[0], eval) + " " + e.op + " " + describe(*e.args[1], eval);
  }
  const bool compares = (e.kind == Expression::Kind::kBinary && is_comparison(e.op)) ||
                        e.kind == Expression::Kind::kCall;
  if (!compares) return figure(eval(e));
  std::string out;
  for (size_t i = 0; i < e.args.size(); ++i) {
    const Value v = eval(*e.args[i]);
    out += (i == 0 ? "" : e.kind == Expression::Kind::kCall ? ", " : " " + e.op + " ") + figure(v);
  }
  return e.kind == Expression::Kind::kCall ? e.op + "(" + out + ")" : out;
}

}  // namespace

Sample summarise(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  Sample s;
  s.runs = static_cast<int>(n);
  s.low = values.front();
  s.high = values.back();
  s.median = n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2.0;
  return s;
}

std::string NameRef::written() const {
  if (!step.empty()) return "steps." + step + "." + measure;
  return kept.empty() ? measure : kept + "." + measure;
}

ParsedExpression parse_expression(std::string_view text) {
  try {
    return {Parser(text).parse(), {}};
  } catch (const SyntaxError& error) {
    return {nullptr, error.what()};
  }
}

std::vector<NameRef> names_read(const Expression& expression) {
  std::vector<NameRef> out;
  collect_names(expression, out);
  return out;
}

ConditionResult evaluate(const Expectation& expectation, const ExpectationInputs& inputs) {
  ConditionResult result;
  result.condition = expectation.written;
  if (!expectation.expression) {
    result.detail = "the condition did not parse";
    return result;
  }
  const Expression& e = *expectation.expression;
  const Evaluator eval(inputs);
  try {
    const bool compares = (e.kind == Expression::Kind::kBinary && is_comparison(e.op)) ||
                          e.kind == Expression::Kind::kCall;
    result.value = eval(compares ? *e.args[0] : e).mid;
    if (e.kind == Expression::Kind::kBinary && !compares) result.value.reset();  // and / or
    result.passed = is_true(eval(e));
    result.detail = describe(e, eval);
  } catch (const Unmeasured& missing) {
    result.value.reset();
    result.detail = missing.name + " was not measured";
  } catch (const EvaluationError& error) {
    result.value.reset();
    result.passed = false;
    result.detail = error.what();
  }
  return result;
}

}  // namespace servescope::lessons
