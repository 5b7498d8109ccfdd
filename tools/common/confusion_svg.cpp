#include "tools/common/confusion_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "tools/common/report_text.h"
#include "tools/common/svg_chart.h"

namespace mcdl::tools {
namespace {

constexpr double kCharWidth = 6.2;  // an 11 px sans-serif character, on average
constexpr size_t kMaxNameChars = 24;
constexpr double kLabelPitch = 12;  // the least room a row or column label needs

// The share's colour: white at 0, dark blue at 1 (as a CSS rgb()).
std::string shade(double f) {
  char text[40];
  std::snprintf(text, sizeof text, "rgb(%d,%d,%d)", static_cast<int>(255 - 230 * f), static_cast<int>(255 - 190 * f),
                static_cast<int>(255 - 80 * f));
  return text;
}

std::string shortened(const std::string& name) {
  return name.size() <= kMaxNameChars ? name : name.substr(0, kMaxNameChars - 1) + "…";
}

}  // namespace

std::string confusion_svg(const ClassClusters& table, const std::vector<std::string>& class_names) {
  const int64_t rows = table.classes, columns = table.columns();
  std::vector<std::string> row_names, column_names;
  size_t longest = 0;
  for (int64_t c = 0; c < rows; ++c) {
    row_names.push_back(shortened(c < static_cast<int64_t>(class_names.size()) ? class_names[static_cast<size_t>(c)]
                                                                                 : "class " + std::to_string(c)));
    longest = std::max(longest, row_names.back().size());
  }
  for (int64_t k = 0; k < columns; ++k) {
    column_names.push_back(shortened(column_name(table, k, class_names)));
    longest = std::max(longest, column_names.back().size());
  }
  const double cell = std::clamp(std::floor(560.0 / static_cast<double>(std::max(rows, columns))), 2.0, 44.0);
  // Every row and column named where they are tall enough, else every `stride`-th.
  const int64_t stride = static_cast<int64_t>(std::ceil(kLabelPitch / cell));
  const double label_room = kCharWidth * static_cast<double>(longest) + 10;
  const double left = 30 + label_room, top = 40 + label_room * 0.72;  // column labels slant at 45°
  const double width_px = cell * static_cast<double>(columns), height_px = cell * static_cast<double>(rows);
  // Room on the right for the last column's slanted label and the axis title.
  const double total_width = std::max(left + width_px + label_room * 0.72 + 10, left + 370),
               total_height = top + height_px + 90;

  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + svg_number(total_width) + "\" height=\"" +
                    svg_number(total_height) + "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg += "<text x=\"10\" y=\"18\" font-size=\"13\" font-weight=\"bold\">Classes against clusters (the last "
         "evaluation)</text>\n";
  // Axis titles: the predicted cluster across the top, the true class down the left.
  svg += "<text x=\"" + svg_number(left) + "\" y=\"34\">predicted cluster (named by its Hungarian-matched "
         "class)</text>\n";
  svg += "<text transform=\"translate(16," + svg_number(top + height_px / 2) +
         ") rotate(-90)\" text-anchor=\"middle\">true class</text>\n";
  for (int64_t c = 0; c < rows; c += stride)
    svg += "<text x=\"" + svg_number(left - 5) + "\" y=\"" + svg_number(top + cell * (static_cast<double>(c) + 0.5) + 4) +
           "\" text-anchor=\"end\">" + markup_escape(row_names[static_cast<size_t>(c)]) + "</text>\n";
  for (int64_t k = 0; k < columns; k += stride) {
    const double x = left + cell * (static_cast<double>(k) + 0.5) + 3, y = top - 5;
    svg += "<text transform=\"translate(" + svg_number(x) + "," + svg_number(y) + ") rotate(-45)\">" +
           markup_escape(column_names[static_cast<size_t>(k)]) + "</text>\n";
  }
  svg += "<rect x=\"" + svg_number(left) + "\" y=\"" + svg_number(top) + "\" width=\"" + svg_number(width_px) +
         "\" height=\"" + svg_number(height_px) + "\" fill=\"white\" stroke=\"#bbb\"/>\n";
  // The cells that hold images (the others stay white), each with its share and a tooltip.
  for (int64_t c = 0; c < rows; ++c) {
    const int64_t total = table.class_total(c);
    for (int64_t k = 0; k < columns; ++k) {
      const int64_t n = table.counts[static_cast<size_t>(c)][static_cast<size_t>(k)];
      if (n == 0) continue;
      const double f = static_cast<double>(n) / static_cast<double>(total);
      const double x = left + cell * static_cast<double>(k), y = top + cell * static_cast<double>(c);
      svg += "<rect x=\"" + svg_number(x) + "\" y=\"" + svg_number(y) + "\" width=\"" + svg_number(cell) +
             "\" height=\"" + svg_number(cell) + "\" fill=\"" + shade(f) + "\"><title>" +
             markup_escape(row_names[static_cast<size_t>(c)] + " in the cluster of " +
                           column_names[static_cast<size_t>(k)] + ": " + percent_text(f) + " (" + std::to_string(n) +
                           " of " + std::to_string(total) + " images)") +
             "</title></rect>\n";
      if (cell >= 30) {
        char share[16];
        std::snprintf(share, sizeof share, "%.1f", 100.0 * f);
        svg += "<text x=\"" + svg_number(x + cell / 2) + "\" y=\"" + svg_number(y + cell / 2 + 3.5) +
               "\" text-anchor=\"middle\" font-size=\"10\" fill=\"" + (f > 0.5 ? "white" : "#223") + "\">" + share +
               "</text>\n";
      }
    }
  }
  if (table.num_old > 0 && table.num_old < rows) {  // the old / new boundary, across and down
    const double at = cell * static_cast<double>(table.num_old);
    svg += "<line x1=\"" + svg_number(left) + "\" x2=\"" + svg_number(left + width_px) + "\" y1=\"" +
           svg_number(top + at) + "\" y2=\"" + svg_number(top + at) + "\" stroke=\"#dc0000\" stroke-width=\"1.5\"/>\n";
    svg += "<line x1=\"" + svg_number(left + at) + "\" x2=\"" + svg_number(left + at) + "\" y1=\"" + svg_number(top) +
           "\" y2=\"" + svg_number(top + height_px) + "\" stroke=\"#dc0000\" stroke-width=\"1.5\"/>\n";
  }
  // The legend: the colour scale, and what the numbers and the red line mean.
  const double ly = top + height_px + 22;
  svg += "<defs><linearGradient id=\"share\"><stop offset=\"0\" stop-color=\"" + shade(0) +
         "\"/><stop offset=\"1\" stop-color=\"" + shade(1) + "\"/></linearGradient></defs>\n";
  svg += "<rect x=\"" + svg_number(left) + "\" y=\"" + svg_number(ly) +
         "\" width=\"160\" height=\"10\" fill=\"url(#share)\" stroke=\"#999\"/>\n";
  svg += "<text x=\"" + svg_number(left) + "\" y=\"" + svg_number(ly + 23) + "\">0%</text>\n";
  svg += "<text x=\"" + svg_number(left + 160) + "\" y=\"" + svg_number(ly + 23) +
         "\" text-anchor=\"end\">100%</text>\n";
  svg += "<text x=\"" + svg_number(left + 170) + "\" y=\"" + svg_number(ly + 9) +
         "\">share of the class's images in the cluster" + (cell >= 30 ? " (the numbers: %)" : "") + "</text>\n";
  if (table.num_old > 0 && table.num_old < rows)
    svg += "<line x1=\"" + svg_number(left) + "\" x2=\"" + svg_number(left + 24) + "\" y1=\"" + svg_number(ly + 40) +
           "\" y2=\"" + svg_number(ly + 40) + "\" stroke=\"#dc0000\" stroke-width=\"1.5\"/><text x=\"" +
           svg_number(left + 30) + "\" y=\"" + svg_number(ly + 44) +
           "\">between the known (old) classes and the new ones</text>\n";
  return svg + "</svg>\n";
}

}  // namespace mcdl::tools
