#include "plots.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <fstream>

namespace chtbench {
namespace {

std::string gp_string(const std::string& text) {
  std::string out = "'";
  for (const char ch : text) out += ch == '\'' ? std::string("''") : std::string(1, ch);
  return out + "'";
}

std::string shell_quoted(const std::string& text) {
  std::string out = "'";
  for (const char ch : text) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

// Multi-panel figures: the panels use the canvas left of this x (screen fraction), the legend
// the rest.
constexpr double kLegendColumn = 0.8;

// Markers (gnuplot point types) that stay distinguishable next to the 9 colours. 7 markers, a
// count prime to 9: colour and marker repeat together only after 63 series, so no two of the
// registry's structures look alike in one figure.
constexpr std::array<int, 7> kMarkers = {5, 7, 9, 11, 13, 4, 6};

int style_of(const Series& s, std::size_t position) {
  return s.style >= 0 ? s.style : static_cast<int>(position);
}

// Labels and legends are plain text (noenhanced); tic formats use enhanced text (10^{%L}).
enum class Legend { kOutside, kShared, kNone, kBelow };  // kShared: in the reserved right column

std::string panel_script(const Panel& p, int index, Legend legend) {
  std::string s;
  s += fmt::format("set title {} noenhanced\nset xlabel {} noenhanced\nset ylabel {} noenhanced\n",
                   gp_string(p.title), gp_string(p.xlabel), gp_string(p.ylabel));
  s += "unset logscale\nset grid\nset format x '%g'\n";
  switch (legend) {
    case Legend::kNone:
      s += "unset key\n";
      break;
    case Legend::kShared:  // the key box's top left corner at the reserved column
      s += fmt::format("set key at screen {}, 0.9 top left vertical Left reverse noenhanced\n",
                       kLegendColumn + 0.01);
      break;
    case Legend::kOutside:
      s += "set key outside right top vertical Left reverse noenhanced\n";
      break;
    case Legend::kBelow:
      s += "set key outside below center vertical maxcols 2 Left reverse noenhanced\n";
      break;
  }
  s += "set xtics autofreq norotate\nset autoscale\nset yrange [0:*]\n";
  if (p.logx) {
    s += fmt::format("set logscale x {}\nset format x '{}^{{%L}}'\n", p.logx_base, p.logx_base);
  }
  if (p.logy)
    s += "set logscale y\nset yrange [*:*]\nset format y '10^{%L}'\n";
  else
    s += "set format y '%g'\n";

  std::vector<std::string> items;
  if (!p.categories.empty()) {
    s += "set style data histograms\nset style histogram clustered gap 1\n";
    s += "set style fill solid 0.85 border -1\nset boxwidth 0.9\nset xtics rotate by -25\n";
    const std::string block = fmt::format("$bars{}", index);
    s += block + " << EOD\n";
    for (std::size_t c = 0; c < p.categories.size(); ++c) {
      s += fmt::format("\"{}\"", p.categories[c]);
      for (const Series& ser : p.series) {
        s += c < ser.y.size() && ser.y[c] > 0 ? fmt::format(" {:.6g}", ser.y[c]) : " NaN";
      }
      s += "\n";
    }
    s += "EOD\n";
    for (std::size_t k = 0; k < p.series.size(); ++k) {
      items.push_back(fmt::format("{} using {}{} lt {} title {}", k == 0 ? block : "''", k + 2,
                                  k == 0 ? ":xtic(1)" : "", style_of(p.series[k], k) + 1,
                                  gp_string(p.series[k].title)));
    }
  } else {
    s += "set style data linespoints\n";
    if (!p.xtics.empty()) {
      std::vector<std::string> tics;
      for (const auto& [x, name] : p.xtics)
        tics.push_back(fmt::format("{} {}", gp_string(name), x));
      s += fmt::format("set xtics ({})\nset xrange [{}:{}]\n", fmt::join(tics, ", "),
                       p.xtics.front().first - 0.3, p.xtics.back().first + 0.3);
    }
    for (std::size_t k = 0; k < p.series.size(); ++k) {
      const Series& ser = p.series[k];
      const std::string block = fmt::format("$line{}_{}", index, k);
      s += block + " << EOD\n";
      for (std::size_t i = 0; i < ser.x.size() && i < ser.y.size(); ++i) {
        s += fmt::format("{:.6g} {:.6g}\n", ser.x[i], ser.y[i]);
      }
      s += "EOD\n";
      const int style = style_of(ser, k);
      items.push_back(fmt::format("{} using 1:2 with linespoints lt {} lw 2 pt {} ps 1.2 title {}",
                                  block, style + 1, kMarkers[style % kMarkers.size()],
                                  gp_string(ser.title)));
    }
  }
  for (const std::string& f : p.functions) items.push_back(f);
  const bool has_data = std::ranges::any_of(p.series, [&](const Series& ser) {
    return !ser.y.empty() && (p.categories.empty() ? !ser.x.empty() : true);
  });
  if (!has_data && p.functions.empty()) {  // e.g. a family none of the chosen structures is in
    return s +
           "unset logscale\nset xrange [0:1]\nset yrange [0:1]\nunset xtics\n"
           "set label 1 'no data' at graph 0.5, 0.5 center\nplot NaN notitle\n"
           "unset label 1\nset xtics\nset autoscale xy\n";  // the next panel starts clean
  }
  s += fmt::format("plot {}\n", fmt::join(items, ", \\\n     "));
  return s;
}

}  // namespace

bool render(const Figure& figure, const std::filesystem::path& dir) {
  const auto script_path = dir / (figure.name + ".gp");
  std::string s =
      fmt::format("set terminal pngcairo size {},{} enhanced font 'Sans,10'\nset output {}\n",
                  figure.width, figure.height, gp_string((dir / (figure.name + ".png")).string()));
  s += "set linetype 1 lc rgb '#1f77b4'\nset linetype 2 lc rgb '#d62728'\n"
       "set linetype 3 lc rgb '#2ca02c'\nset linetype 4 lc rgb '#ff7f0e'\n"
       "set linetype 5 lc rgb '#9467bd'\nset linetype 6 lc rgb '#8c564b'\n"
       "set linetype 7 lc rgb '#e377c2'\nset linetype 8 lc rgb '#17becf'\n"
       "set linetype 9 lc rgb '#7f7f7f'\nset linetype cycle 9\n";
  if (figure.panels.size() > 1) {
    s += fmt::format(
        "set multiplot layout {},{} margins 0.05, {}, {}, 0.9 spacing 0.07, 0.12 title {} "
        "noenhanced\n",
        figure.rows, figure.cols, figure.legend_per_panel ? 0.98 : kLegendColumn - 0.02,
        figure.legend_per_panel ? 0.4 : 0.08, gp_string(figure.title));
  }
  for (std::size_t i = 0; i < figure.panels.size(); ++i) {
    const Legend legend = figure.panels.size() == 1 ? Legend::kOutside
                          : figure.legend_per_panel ? Legend::kBelow
                          : i == 0                  ? Legend::kShared
                                                    : Legend::kNone;
    s += panel_script(figure.panels[i], static_cast<int>(i), legend);
  }
  if (figure.panels.size() > 1) s += "unset multiplot\n";
  {
    std::ofstream out(script_path);
    out << s;
    if (!out) return false;
  }
  const auto log_path = dir / (figure.name + ".gnuplot.log");
  const std::string command = fmt::format("gnuplot {} 2>{}", shell_quoted(script_path.string()),
                                          shell_quoted(log_path.string()));
  const bool ok = std::system(command.c_str()) == 0;
  if (ok) std::filesystem::remove(log_path);
  return ok;
}

}  // namespace chtbench
