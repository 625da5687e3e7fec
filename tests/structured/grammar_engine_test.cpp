// The grammar engine on its own: regex and EBNF front ends, the compiler's limits, the Earley
// matcher (accept, rollback, end), and the fast mask walk against token-by-token acceptance.

#include <gtest/gtest.h>

#include <random>

#include "structured/grammar_error.h"
#include "structured_test_util.h"

namespace dcu::structured {
namespace {

using namespace testing;

bool matches(const std::shared_ptr<const CompiledGrammar>& g, const std::string& s) {
  auto tg = std::make_shared<TokenGrammar>(g, synthetic_vocabulary());
  GrammarMatcher m(tg, {});
  return m.accept_bytes(s) && m.can_end();
}

TEST(GrammarEngine, RegexWholeMatch) {
  auto g = compile_regex("(ab|cd)*x{2,3}[0-9]?");
  EXPECT_TRUE(matches(g, "xx"));
  EXPECT_TRUE(matches(g, "abcdxxx7"));
  EXPECT_FALSE(matches(g, "abx"));
  EXPECT_FALSE(matches(g, "xxxx"));
  EXPECT_FALSE(matches(g, "abcdxx77"));
}

TEST(GrammarEngine, RegexEscapesAndClasses) {
  auto g = compile_regex(R"(\d{3}-\w+\s[^a-z]\.\x41\u00e9)");
  EXPECT_TRUE(matches(g, "123-ab_9 Z.A\xc3\xa9"));
  EXPECT_FALSE(matches(g, "123-ab_9 z.A\xc3\xa9"));
  EXPECT_FALSE(matches(g, "12-ab 1.A\xc3\xa9"));
  auto anchored = compile_regex("^a+$");
  EXPECT_TRUE(matches(anchored, "aaa"));
}

TEST(GrammarEngine, RegexUnsupportedConstructsNameThemselves) {
  auto message = [](const std::string& re) {
    try {
      compile_regex(re);
    } catch (const GrammarError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("a(?=b)").find("lookahead"), std::string::npos);
  EXPECT_NE(message("(?<!a)b").find("lookbehind"), std::string::npos);
  EXPECT_NE(message("(a)\\1").find("backreference"), std::string::npos);
  EXPECT_NE(message("\\bword").find("word boundary"), std::string::npos);
  EXPECT_NE(message("\\p{L}").find("Unicode property"), std::string::npos);
  EXPECT_NE(message("(?i)abc").find("inline flag"), std::string::npos);
  EXPECT_NE(message("a|b)").find("unbalanced"), std::string::npos);
  EXPECT_NE(message("[a-").find("unterminated"), std::string::npos);
  EXPECT_NE(message("a^b").find("anchor"), std::string::npos);
}

TEST(GrammarEngine, EbnfRecursionAndRepetition) {
  auto g = compile_ebnf(R"G(
    root ::= expr
    expr ::= term ("+" term)*   # sums
    term ::= [0-9]+ | "(" expr ")"
  )G");
  EXPECT_TRUE(matches(g, "1+(2+(3))"));
  EXPECT_TRUE(matches(g, "((((7))))"));
  EXPECT_FALSE(matches(g, "1+"));
  EXPECT_FALSE(matches(g, "(1"));
  auto rep = compile_ebnf("root ::= ('a' | \"b\"){2,3} [^x]");
  EXPECT_TRUE(matches(rep, "abz"));
  EXPECT_FALSE(matches(rep, "az"));
  EXPECT_FALSE(matches(rep, "abax"));
}

TEST(GrammarEngine, EbnfNullableAndLeftRecursion) {
  auto g = compile_ebnf(R"G(
    root ::= list
    list ::= list "," item | item | ""
    item ::= opt "x"
    opt ::= "-" | ""
  )G");
  EXPECT_TRUE(matches(g, ""));
  EXPECT_TRUE(matches(g, "x,-x,x"));
  EXPECT_FALSE(matches(g, "x,"));
}

TEST(GrammarEngine, EbnfErrors) {
  EXPECT_THROW(compile_ebnf("start ::= \"a\""), GrammarError);          // no root
  EXPECT_THROW(compile_ebnf("root ::= a"), GrammarError);               // a undefined
  EXPECT_THROW(compile_ebnf("root ::= \"a"), GrammarError);             // unterminated
  EXPECT_THROW(compile_ebnf("root ::= root"), GrammarError);            // matches nothing
  EXPECT_THROW(compile_ebnf("root ::= [b-a]"), GrammarError);
}

TEST(GrammarEngine, CompileLimits) {
  Grammar g;
  g.root = g.add_rule("root");
  g.set_body(g.root, parse_regex(g, "(a|b)*a(a|b){14}", CharEncoding::Raw, RegexMatch::Whole));
  CompileLimits small;
  small.max_dfa_states = 1000;  // the DFA of this regex has 2^15 states
  EXPECT_THROW(compile_grammar(g, small), GrammarError);
  EXPECT_NO_THROW(compile_grammar(g));
}

TEST(GrammarEngine, IntersectionAndDifference) {
  Grammar g;
  g.root = g.add_rule("root");
  const int word = parse_regex(g, "[a-z]+", CharEncoding::Raw, RegexMatch::Whole);
  const int short_text = g.repeat(g.chars({{0, kMaxCodePoint}}), 2, 3);
  const int reserved = g.alt({g.literal("if"), g.literal("for")});
  g.set_body(g.root, g.difference(g.intersect(word, short_text), reserved));
  auto c = compile_grammar(g);
  EXPECT_TRUE(matches(c, "ab"));
  EXPECT_TRUE(matches(c, "fox"));
  EXPECT_FALSE(matches(c, "if"));
  EXPECT_FALSE(matches(c, "for"));
  EXPECT_FALSE(matches(c, "a"));
  EXPECT_FALSE(matches(c, "abcd"));
}

TEST(GrammarEngine, MatcherEndTokensAndRollback) {
  auto v = synthetic_vocabulary();
  auto tg = std::make_shared<TokenGrammar>(compile_regex("ab?"), v);
  GrammarMatcher m(tg, {end_token(*v)});
  auto id_of = [&](const std::string& s) {
    for (int32_t i = 0; i < v->size(); ++i)
      if (v->bytes(i) == s) return i;
    return -1;
  };
  EXPECT_FALSE(m.accept_token(end_token(*v)));  // nothing yet: may not end
  ASSERT_TRUE(m.accept_token(id_of("a")));
  auto mask = mask_of(m, v->size());
  EXPECT_TRUE(allowed(mask, id_of("b")));
  EXPECT_TRUE(allowed(mask, end_token(*v)));
  EXPECT_FALSE(allowed(mask, id_of("a")));
  ASSERT_TRUE(m.accept_token(id_of("b")));
  EXPECT_TRUE(m.finished());
  mask = mask_of(m, v->size());
  for (int32_t i = 0; i < v->size(); ++i) EXPECT_EQ(allowed(mask, i), i == end_token(*v)) << i;
  ASSERT_TRUE(m.accept_token(end_token(*v)));
  EXPECT_TRUE(m.terminated());
  m.rollback(2);
  EXPECT_FALSE(m.terminated());
  EXPECT_EQ(m.accepted_tokens(), 1);
  EXPECT_TRUE(m.accept_token(id_of("b")));
}

TEST(GrammarEngine, FastMaskEqualsTokenByTokenAcceptance) {
  auto v = synthetic_vocabulary();
  const char* grammars[] = {
      R"G(root ::= "{" ws (pair (ws "," ws pair)*)? ws "}"
         pair ::= str ws ":" ws value
         value ::= str | num | root | "[" ws (value (ws "," ws value)*)? ws "]" | "true" | "null"
         str ::= "\"" ([^"\\] | "\\" ["\\nt])* "\""
         num ::= "-"? [0-9]+ ("." [0-9]+)?
         ws ::= [ \n]{0,4})G",
      R"G(root ::= ([a-c]+ "x") | ("a" [0-9]*) | "abc\"")G",
      R"G(root ::= "<" tag ">" body "</" tag ">"
         tag ::= "b" | "em"
         body ::= ([^<] | root)*)G",
  };
  std::mt19937 rng(7);
  for (const char* text : grammars) {
    auto tg = std::make_shared<TokenGrammar>(compile_ebnf(text), v);
    for (int walk = 0; walk < 6; ++walk) {
      GrammarMatcher m(tg, {end_token(*v)});
      int mismatches = 0;
      random_walk(m, *v, rng, 40, true, &mismatches);
      EXPECT_EQ(mismatches, 0) << text;
    }
  }
}

}  // namespace
}  // namespace dcu::structured
