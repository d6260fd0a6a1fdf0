#include <catch2/catch.hpp>

#include "core/train/parallel_layout.hpp"

using namespace ezpz::core;
using Groups = std::vector<std::vector<int>>;

TEST_CASE("world 16 layouts match ezpz's tables", "[parallel_layout]") {
  SECTION("tp2 pp2") {
    auto l = ParallelLayout::make(16, 2, 2, 1);
    REQUIRE(l);
    CHECK(l->size(ParallelDim::dp) == 4);
    CHECK(l->groups(ParallelDim::tp).front() == std::vector<int>{0, 1});
    CHECK(l->groups(ParallelDim::tp).back() == std::vector<int>{14, 15});
    CHECK(l->groups(ParallelDim::pp) == Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}, {8, 10}, {9, 11}, {12, 14}, {13, 15}});
    CHECK(l->groups(ParallelDim::dp) == Groups{{0, 4, 8, 12}, {1, 5, 9, 13}, {2, 6, 10, 14}, {3, 7, 11, 15}});
    CHECK(l->groups(ParallelDim::cp).size() == 16);
    CHECK(l->members(ParallelDim::cp, 5) == std::vector<int>{5});
  }
  SECTION("tp2 pp2 cp2") {
    auto l = ParallelLayout::make(16, 2, 2, 2);
    REQUIRE(l);
    CHECK(l->size(ParallelDim::dp) == 2);
    CHECK(l->groups(ParallelDim::pp) == Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}, {8, 12}, {9, 13}, {10, 14}, {11, 15}});
    CHECK(l->groups(ParallelDim::dp) == Groups{{0, 8}, {1, 9}, {2, 10}, {3, 11}, {4, 12}, {5, 13}, {6, 14}, {7, 15}});
    CHECK(l->groups(ParallelDim::cp).front() == std::vector<int>{0, 2});
    CHECK(l->groups(ParallelDim::cp)[1] == std::vector<int>{1, 3});
    CHECK(l->groups(ParallelDim::cp)[2] == std::vector<int>{4, 6});
  }
}

TEST_CASE("world 8 tp2: TP pairs and strided DP", "[parallel_layout]") {
  auto l = ParallelLayout::make(8, 2);
  REQUIRE(l);
  CHECK(l->groups(ParallelDim::tp) == Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}});
  CHECK(l->groups(ParallelDim::dp) == Groups{{0, 2, 4, 6}, {1, 3, 5, 7}});
  CHECK(l->group_rank(ParallelDim::dp, 6) == 3);
  CHECK(l->group_index(ParallelDim::dp, 7) == 1);
  CHECK(l->group_index(ParallelDim::tp, 5) == 2);
}

TEST_CASE("coordinates round-trip with TP fastest", "[parallel_layout]") {
  auto l = ParallelLayout::make(24, 2, 3, 2);
  REQUIRE(l);
  for (int r = 0; r < 24; ++r) {
    CHECK(l->rank_of(l->coord(r)) == r);
  }
  CHECK(l->coord(13) == ParallelCoord{1, 0, 0, 1});
  CHECK(l->coord(7) == ParallelCoord{0, 1, 1, 1});
}

TEST_CASE("sizes that do not divide are named", "[parallel_layout]") {
  auto bad_tp = ParallelLayout::make(6, 4);
  REQUIRE_FALSE(bad_tp);
  CHECK_THAT(bad_tp.error().message, Catch::Contains("world size 6 is not divisible by tp 4"));
  auto bad_product = ParallelLayout::make(8, 2, 3);
  REQUIRE_FALSE(bad_product);
  CHECK_THAT(bad_product.error().message, Catch::Contains("tp*pp*cp = 2*3*1 = 6"));
  auto bad_cp = ParallelLayout::make(8, 1, 1, 3);
  REQUIRE_FALSE(bad_cp);
  CHECK_THAT(bad_cp.error().message, Catch::Contains("cp 3"));
  CHECK_FALSE(ParallelLayout::make(8, 0));
  // tp is clamped to the world (ezpz's rule)
  auto clamped = ParallelLayout::make(2, 8);
  REQUIRE(clamped);
  CHECK(clamped->size(ParallelDim::tp) == 2);
}
