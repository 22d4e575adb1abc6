// Strict YAML reading into YamlNode trees (see yaml_tree.hpp), from libfyaml's event stream.
#include "common/yaml_tree.hpp"

#include <libfyaml.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <unordered_map>

#include "common/error.hpp"

namespace fabtrain {

const std::string& YamlNode::text() const {
  static const std::string none;
  return data_ && data_->kind == Kind::scalar ? data_->text : none;
}

std::string YamlNode::describe() const {
  switch (kind()) {
    case Kind::null:
      return "nothing";
    case Kind::scalar:
      return "a scalar '" + text() + "'";
    case Kind::sequence:
      return "a list";
    case Kind::mapping:
      return "a mapping";
    case Kind::missing:
      break;
  }
  return "nothing (missing)";
}

std::size_t YamlNode::size() const {
  return is_sequence() ? data_->items.size() : is_mapping() ? data_->entries.size() : 0;
}

const std::vector<YamlNode>& YamlNode::items() const {
  static const std::vector<YamlNode> none;
  return is_sequence() ? data_->items : none;
}

const std::vector<YamlNode::Entry>& YamlNode::entries() const {
  static const std::vector<Entry> none;
  return is_mapping() ? data_->entries : none;
}

YamlNode YamlNode::operator[](const std::string& key) const {
  for (const auto& [k, v] : entries())
    if (k == key) return v;
  return {};
}

YamlNode YamlNode::empty_sequence() {
  auto d = std::make_shared<Data>();
  d->kind = Kind::sequence;
  return YamlNode(std::move(d));
}

namespace {

struct ParserDeleter {
  void operator()(fy_parser* p) const { fy_parser_destroy(p); }
};
struct DiagDeleter {
  void operator()(fy_diag* d) const { fy_diag_destroy(d); }
};
struct EventFree {
  fy_parser* parser;
  void operator()(fy_event* e) const { fy_parser_event_free(parser, e); }
};

// libfyaml's own account of a syntax error, gathered instead of printed.
void collect_diagnostic(fy_diag*, void* user, const char* buf, std::size_t len) {
  auto& out = *static_cast<std::string*>(user);
  if (out.size() < 4096) out.append(buf, len);
}

std::string token_text(fy_token* t) {
  std::size_t len = 0;
  const char* s = t ? fy_token_get_text(t, &len) : nullptr;
  return s ? std::string(s, len) : std::string();
}

// "line L, column C: why" from libfyaml's first message ("<input>:L:C: error: why").
std::string first_reason(const std::string& diagnostics) {
  const std::string first = diagnostics.substr(0, diagnostics.find('\n'));
  const auto at = first.find(": error: ");
  if (at == std::string::npos) return first.empty() ? "a syntax error" : first;
  const std::string reason = first.substr(at + 9);
  const auto column_at = first.rfind(':', at - 1);
  const auto line_at = column_at == 0 || column_at == std::string::npos
                           ? std::string::npos
                           : first.rfind(':', column_at - 1);
  if (line_at == std::string::npos) return reason;
  return fmt::format("line {}, column {}: {}", first.substr(line_at + 1, column_at - line_at - 1),
                     first.substr(column_at + 1, at - column_at - 1), reason);
}

}  // namespace

// Turns the event stream into nodes, with an explicit stack (no recursion on nesting).
class YamlTreeBuilder {
 public:
  YamlTreeBuilder(std::string file, std::string what)
      : file_(std::move(file)), what_(std::move(what)) {}

  // false once the stream has ended.
  bool take(fy_event* e) {
    const int line = fy_event_start_mark(e) ? fy_event_start_mark(e)->line + 1 : 0;
    switch (e->type) {
      case FYET_STREAM_END:
        return false;
      case FYET_DOCUMENT_START:
        ++documents_;
        break;
      case FYET_MAPPING_START:
      case FYET_SEQUENCE_START:
        open(e->type == FYET_MAPPING_START ? YamlNode::Kind::mapping : YamlNode::Kind::sequence,
             line);
        break;
      case FYET_MAPPING_END:
      case FYET_SEQUENCE_END:
        if (!stack_.empty()) stack_.pop_back();
        break;
      case FYET_SCALAR:
        scalar(e, line);
        break;
      case FYET_ALIAS:
        fail("{}: line {}: {}: an alias (*{}); fabtrain's files write every value out", file_, line,
             place(), token_text(e->alias.anchor));
      default:
        break;
    }
    return true;
  }

  YamlNode result() const {
    if (documents_ > 1)
      fail("{}: holds {} YAML documents (separated by ---); a {} file is one", file_, documents_,
           what_);
    return root_ ? root_ : YamlNode(std::make_shared<YamlNode::Data>());  // no document: null
  }

 private:
  struct Open {
    std::shared_ptr<YamlNode::Data> node;
    std::string path;
    bool have_key = false;
    std::string key;
    std::unordered_map<std::string, int> key_lines;
  };

  std::string place() const {
    if (stack_.empty()) return "top level";
    const Open& top = stack_.back();
    if (top.node->kind == YamlNode::Kind::mapping && top.have_key) return child_path(top.key);
    return top.path.empty() ? "top level" : top.path;
  }
  std::string child_path(const std::string& key) const {
    const std::string& p = stack_.back().path;
    return p.empty() ? key : p + "." + key;
  }

  std::shared_ptr<YamlNode::Data> make(YamlNode::Kind kind, int line) {
    auto d = std::make_shared<YamlNode::Data>();
    d->kind = kind;
    d->line = line;
    return d;
  }

  // Adds a finished or opened node where the stack expects one; returns its path.
  std::string attach(const std::shared_ptr<YamlNode::Data>& d) {
    if (documents_ > 1) return "";  // only counted; result() refuses the file
    if (stack_.empty()) {
      root_ = YamlNode(d);
      return "";
    }
    Open& top = stack_.back();
    if (top.node->kind == YamlNode::Kind::sequence) {
      top.node->items.push_back(YamlNode(d));
      return fmt::format("{}[{}]", top.path, top.node->items.size() - 1);
    }
    if (!top.have_key)
      fail("{}: line {}: {}: a key must be a plain name, found {}", file_, d->line, place(),
           YamlNode(d).describe());
    top.node->entries.emplace_back(top.key, YamlNode(d));
    top.have_key = false;
    return child_path(top.key);
  }

  void open(YamlNode::Kind kind, int line) {
    auto d = make(kind, line);
    std::string path = attach(d);
    if (documents_ > 1) return;
    if (int(stack_.size()) >= kMaxYamlDepth)
      fail("{}: line {}: nested more than {} levels deep; fabtrain's files nest a few", file_, line,
           kMaxYamlDepth);
    Open o;
    o.node = std::move(d);
    o.path = std::move(path);
    stack_.push_back(std::move(o));
  }

  void scalar(fy_event* e, int line) {
    fy_token* value = e->scalar.value;
    std::string text = token_text(value);
    const bool plain = !value || fy_token_scalar_style(value) == FYSS_PLAIN;
    const bool null = plain && (text.empty() || text == "~" || text == "null" || text == "Null" ||
                                text == "NULL");
    if (documents_ <= 1 && !stack_.empty() && stack_.back().node->kind == YamlNode::Kind::mapping &&
        !stack_.back().have_key) {
      key(std::move(text), null, line);
      return;
    }
    auto d = make(null ? YamlNode::Kind::null : YamlNode::Kind::scalar, line);
    if (!null) d->text = std::move(text);
    attach(d);
  }

  void key(std::string text, bool null, int line) {
    Open& top = stack_.back();
    if (null)
      fail("{}: line {}: {}: a key must be a plain name, found nothing", file_, line, place());
    const auto [it, fresh] = top.key_lines.emplace(text, line);
    if (!fresh)
      fail("{}: line {}: {}: duplicate key (it appears twice in one mapping, first on line {})",
           file_, line, child_path(text), it->second);
    top.key = std::move(text);
    top.have_key = true;
  }

  std::string file_, what_;
  int documents_ = 0;
  YamlNode root_;
  std::vector<Open> stack_;
};

namespace {

// The offset of the first byte that is not UTF-8 text (or is a control character other than tab,
// newline and carriage return), or npos.
std::size_t first_non_text(const std::string& s) {
  for (std::size_t i = 0; i < s.size();) {
    const unsigned char c = s[i];
    if (c < 0x80) {
      if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f) return i;
      ++i;
      continue;
    }
    const int extra = (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2 : (c & 0xf8) == 0xf0 ? 3 : -1;
    if (extra < 0 || c == 0xc0 || c == 0xc1 || c > 0xf4) return i;
    for (int k = 1; k <= extra; ++k)
      if (i + k >= s.size() || (static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return i;
    i += std::size_t(extra) + 1;
  }
  return std::string::npos;
}

}  // namespace

YamlNode parse_yaml(const std::string& text, const std::string& file, const std::string& what) {
  if (const std::size_t at = first_non_text(text); at != std::string::npos)
    fail("{}: byte {} (0x{:02x}) is not UTF-8 text; a {} file is YAML text", file, at,
         static_cast<unsigned char>(text[at]), what);
  std::string diagnostics;
  fy_diag_cfg dcfg;
  fy_diag_cfg_default(&dcfg);
  dcfg.fp = nullptr;
  dcfg.output_fn = collect_diagnostic;
  dcfg.user = &diagnostics;
  dcfg.colorize = false;
  std::unique_ptr<fy_diag, DiagDeleter> diag(fy_diag_create(&dcfg));
  fy_parse_cfg cfg{};
  cfg.flags = fy_parse_cfg_flags(FYPCF_QUIET | FYPCF_DISABLE_MMAP_OPT | FYPCF_JSON_NONE);
  cfg.diag = diag.get();
  std::unique_ptr<fy_parser, ParserDeleter> parser(fy_parser_create(&cfg));
  if (!diag || !parser || fy_parser_set_string(parser.get(), text.data(), text.size()) != 0)
    fail("{}: cannot start the YAML parser (out of memory?)", file);
  YamlTreeBuilder builder(file, what);
  for (;;) {
    std::unique_ptr<fy_event, EventFree> e(fy_parser_parse(parser.get()), EventFree{parser.get()});
    if (!e || !builder.take(e.get())) break;
  }
  if (fy_parser_get_stream_error(parser.get()))
    fail("{}: not valid YAML: {}", file, first_reason(diagnostics));
  return builder.result();
}

YamlNode load_yaml_file(const std::string& path, const std::string& what) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) fail("{} file not found: {}", what, path);
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec || size > kMaxYamlFileBytes)
    fail("{}: {} bytes; fabtrain handles {} files of at most {} bytes (they hold a few KiB)", path,
         size, what, kMaxYamlFileBytes);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot read the {} file {}", what, path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse_yaml(text, path, what);
}

}  // namespace fabtrain
