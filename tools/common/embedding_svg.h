// embedding.svg of mcdl_report: a 2-D map of the evaluated images (t-SNE of their features),
// each image a mark coloured by its predicted cluster, a square for an image of a known (old)
// class and a disc for the others, ringed in black where its cluster is not its class's (v2
// match); axis titles, and a legend that names each colour by the cluster's matched class.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace mcdl::tools {

struct EmbeddingPoint {
  double x = 0, y = 0;     // the map's coordinates (any scale: the picture fits them)
  int64_t colour = 0;      // an index into the legend's names
  bool known_class = false;  // an image of an old (labelled) class: a square
  bool mismatched = false;   // its cluster is not its class's: a black ring
  std::string tooltip;       // "Coat (new class) in the cluster of Pullover"
};

// `colour_names[c]`: what colour c stands for ("Coat", "cluster 12"); `has_labels`: whether the
// images' classes are known at all (else the legend says so, and draws no ring).
std::string embedding_svg(const std::vector<EmbeddingPoint>& points, const std::vector<std::string>& colour_names,
                          bool has_labels);

// The colour of index c: hues spread by the golden angle ("#rrggbb").
std::string cluster_colour(int64_t c);

}  // namespace mcdl::tools
