#!/usr/bin/env Rscript
# Reference values for ood-store's analysis tests, computed with R alone (stats, mgcv, metafor).
#
#   Rscript tests/reference/make_reference.R      (from the repository root; or `make reference`)
#
# Tested with R 4.2.2, mgcv 1.8-41, metafor 3.8-1, pwr 1.3-0, jsonlite 1.8 (Debian's r-base-core, r-cran-mgcv,
# r-cran-metafor, r-cran-pwr). Nothing here calls ood-store: the series are read from the lm-eval JSON fixtures with
# jsonlite, or generated below with R's own random numbers, and written to series.csv so that the Python
# tests analyse exactly the same numbers. Every number is written with 17 significant digits.
#
# Files written beside this script (tests/reference/README.md says what each column is):
#   series.csv        dataset, run, step, task, value: the inputs
#   runs.csv          dataset, run, family, seed: run attributes of the planted sets
#   linear.csv        lm() residuals, their correlation, the t test on n - 3, Fisher interval, lag-1 acf, n_eff
#   gam.csv           mgcv s(z, bs = "cr", k) fits: residual correlations and edf, by GCV.Cp and by REML
#   meta_input.csv    yi = atanh(r), vi = 1 / (n_eff - 4) per run and pair (from linear.csv, and two 20-run sets)
#   meta.csv          metafor::rma(yi, vi, method = "PM") per set and pair
#   subgroups.csv     metafor::rma(yi, vi, mods = ~ factor(family), method = "PM" / "REML"): moderator test etc.
#   subgroup_means.csv  the same models' per-family estimates (mods = ~ factor(family) - 1)
#   meta_knha.csv     rma(yi, vi, method = "PM", test = "knha") per set and pair, and confint()'s Q-profile tau^2 interval
#   subgroups_knha.csv  the planted sets' rma(yi, vi, mods = ~ factor(family), test = "knha"): F test, per-family se,
#                     and the Q-profile tau^2 interval of the z model
#   power.csv         closed-form power: pwr::pwr.r.test for one partial correlation, and for the random-effects
#                     pooled estimate Jackson & Turner's (2017) formula (z test) and the noncentral t (Knapp-Hartung)

suppressPackageStartupMessages({
  library(jsonlite)
  library(mgcv)
  library(metafor)
  library(pwr)
})

here <- "tests/reference"
fixtures <- "tests/fixtures/lm-eval-real/pythia-v1"
stopifnot(dir.exists(here), dir.exists(fixtures))

IN_DOMAIN <- "lambada_openai"
PYTHIA_OOD <- c("arc_easy", "arc_challenge", "piqa", "sciq", "winogrande", "logiqa", "wsc",
                "hendrycksTest-astronomy", "hendrycksTest-college_biology", "hendrycksTest-global_facts",
                "hendrycksTest-high_school_geography", "hendrycksTest-marketing", "hendrycksTest-nutrition",
                "hendrycksTest-philosophy", "hendrycksTest-sociology", "hendrycksTest-world_religions")
GAM_K <- 10 # mgcv's default basis dimension for bs = "cr"

write_ref <- function(frame, name) {
  for (column in names(frame)) {
    if (is.double(frame[[column]])) frame[[column]] <- sprintf("%.17g", frame[[column]])
  }
  write.csv(frame, file.path(here, name), row.names = FALSE, quote = TRUE, na = "")
}

# ---------------------------------------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------------------------------------

read_pythia <- function() {
  rows <- list()
  for (size in c("160m", "410m", "1.4b")) {
    folder <- file.path(fixtures, paste0("pythia-", size), "zero-shot")
    for (file in list.files(folder, pattern = "\\.json$", full.names = TRUE)) {
      doc <- fromJSON(file, simplifyVector = FALSE)
      pairs <- strsplit(strsplit(doc$config$model_args, ",")[[1]], "=")
      args <- setNames(vapply(pairs, `[`, "", 2), vapply(pairs, `[`, "", 1))
      step <- as.integer(sub("^step", "", args[["revision"]]))
      for (task in c(IN_DOMAIN, PYTHIA_OOD)) {
        rows[[length(rows) + 1]] <- data.frame(dataset = "pythia", run = args[["pretrained"]], step = step,
                                               task = task, value = doc$results[[task]]$acc)
      }
    }
  }
  do.call(rbind, rows)
}

long <- function(dataset, run, values) {
  n <- nrow(values)
  data.frame(dataset = dataset, run = run, step = rep(seq_len(n) * 100L, ncol(values)),
             task = rep(colnames(values), each = n), value = as.vector(values))
}

# GAM edge cases: an in-domain score with only 6 distinct values (the basis shrinks to k = 6), and a
# clearly non-linear relation on 40 checkpoints.
synthetic_gam <- function() {
  set.seed(11)
  n <- 27
  z <- sort(rep(c(0, 0.1, 0.15, 0.3, 0.32, 0.5), length.out = n))
  few <- cbind(id = z, a = 0.2 + 0.4 * z + rnorm(n, 0, 0.02), b = 0.6 - z^2 + rnorm(n, 0, 0.02),
               c = 0.3 + sin(6 * z) * 0.05 + rnorm(n, 0, 0.02))
  n <- 40
  z <- sort(runif(n, 0.3, 0.8))
  shared <- rnorm(n, 0, 0.02)
  wiggly <- cbind(id = z, a = 0.5 + sin(10 * z) * 0.1 + shared + rnorm(n, 0, 0.02),
                  b = 0.2 + cos(8 * z) * 0.1 - shared + rnorm(n, 0, 0.02),
                  c = 0.4 + 0.2 * z + rnorm(n, 0, 0.03), d = 0.3 + (z - 0.55)^2 * 2 + shared + rnorm(n, 0, 0.02))
  rbind(long("synthetic", "few-distinct", few), long("synthetic", "wiggly", wiggly))
}

# Planted model-versus-seed data: two families of 6 seeds each, 30 checkpoints. The OOD pair (x, y) has
# residual correlation rho_seed = tanh(atanh(rho_family) + N(0, sd_seed)); w is unrelated noise.
planted <- function(dataset, rho_family, sd_seed, seed) {
  set.seed(seed)
  n <- 30
  rows <- list()
  runs <- list()
  for (family in names(rho_family)) {
    for (s in 1:6) {
      rho <- tanh(atanh(rho_family[[family]]) + rnorm(1, 0, sd_seed))
      z <- sort(runif(n, 0.3, 0.8))
      e1 <- rnorm(n)
      e2 <- rho * e1 + sqrt(1 - rho^2) * rnorm(n)
      values <- cbind(id = z, x = 0.2 + 0.5 * z + 0.02 * e1, y = 0.9 - 0.6 * z + 0.02 * e2,
                      w = 0.4 + 0.1 * z + 0.02 * rnorm(n))
      run <- sprintf("%s-%s-seed%d", dataset, family, s)
      rows[[length(rows) + 1]] <- long(dataset, run, values)
      runs[[length(runs) + 1]] <- data.frame(dataset = dataset, run = run, family = family, seed = as.character(s))
    }
  }
  list(series = do.call(rbind, rows), runs = do.call(rbind, runs))
}

between <- planted("planted-between", c(opt = 0.6, olmo = -0.6), sd_seed = 0.15, seed = 21)
seeds <- planted("planted-seeds", c(opt = 0.3, olmo = 0.3), sd_seed = 0.25, seed = 22)
series <- rbind(read_pythia(), synthetic_gam(), between$series, seeds$series)
runs <- rbind(between$runs, seeds$runs)
write_ref(series, "series.csv")
write_ref(runs, "runs.csv")

# A run's series as a matrix, rows in step order, the in-domain task first.
run_matrix <- function(dataset, run) {
  part <- series[series$dataset == dataset & series$run == run, ]
  tasks <- unique(part$task)
  steps <- sort(unique(part$step))
  m <- sapply(tasks, function(t) {
    p <- part[part$task == t, ]
    p$value[match(steps, p$step)]
  })
  colnames(m) <- tasks
  m
}
in_domain_of <- function(dataset) if (dataset == "pythia") IN_DOMAIN else "id"

# ---------------------------------------------------------------------------------------------------------
# Linear: lm residuals, their correlation, t on n - 3 degrees of freedom (one control), Fisher interval
# ---------------------------------------------------------------------------------------------------------

acf1 <- function(e) acf(e, lag.max = 1, plot = FALSE, demean = TRUE)$acf[2]
effective_n <- function(n, a, b) ifelse(a * b > 0, n * (1 - a * b) / (1 + a * b), n)
t_p <- function(r, dof) 2 * pt(-abs(r * sqrt(dof / (1 - r^2))), dof)

linear_rows <- list()
for (dataset in unique(series$dataset)) {
  if (dataset == "synthetic") next
  for (run in unique(series$run[series$dataset == dataset])) {
    m <- run_matrix(dataset, run)
    z <- m[, in_domain_of(dataset)]
    ood <- setdiff(colnames(m), in_domain_of(dataset))
    e <- sapply(ood, function(t) residuals(lm(m[, t] ~ z)))
    for (i in seq_along(ood)) for (j in seq_along(ood)) {
      if (j <= i) next
      n <- nrow(m)
      r <- cor(e[, i], e[, j])
      dof <- n - 3
      half <- qnorm(0.975) / sqrt(n - 4)
      a <- acf1(e[, i])
      b <- acf1(e[, j])
      n_eff <- effective_n(n, a, b)
      linear_rows[[length(linear_rows) + 1]] <- data.frame(
        dataset = dataset, run = run, task_x = ood[i], task_y = ood[j], n = n, r = r,
        t = r * sqrt(dof / (1 - r^2)), dof = dof, p = t_p(r, dof), ci_low = tanh(atanh(r) - half),
        ci_high = tanh(atanh(r) + half), acf1_x = a, acf1_y = b, n_eff = n_eff, p_eff = t_p(r, n_eff - 3))
    }
  }
}
linear <- do.call(rbind, linear_rows)
write_ref(linear, "linear.csv")

# ---------------------------------------------------------------------------------------------------------
# GAM: mgcv gam(x ~ s(z, bs = "cr", k)), smoothing parameter by GCV.Cp and by REML
# ---------------------------------------------------------------------------------------------------------
# mgcv's own optimiser stops when the score no longer improves by its tolerance, which for GCV can leave the
# smoothing parameter visibly short of the minimum (edf 4.2375 where the minimum is at 4.2276, say). The
# reference is the minimum of mgcv's own criterion (the gcv.ubre score of gam() with sp fixed): a grid of
# log(sp) from -12 to 24, then optimize() in the best cell; mgcv's default fit is kept too (*_default).

criterion_min <- function(x, z, k, method) {
  score <- function(lsp) gam(x ~ s(z, bs = "cr", k = k), method = method, sp = exp(lsp))$gcv.ubre
  default <- gam(x ~ s(z, bs = "cr", k = k), method = method)
  grid <- seq(-12, 24, by = 0.5)
  scores <- vapply(grid, score, 0)
  best <- which.min(scores)
  if (best > 1 && best < length(grid)) {
    found <- optimize(score, c(grid[best - 1], grid[best + 1]), tol = 1e-10)
    lsp <- found$minimum
    value <- found$objective
  } else {
    lsp <- grid[best]
    value <- scores[best]
  }
  if (default$gcv.ubre < value) lsp <- log(default$sp) # mgcv's own fit is better: keep it
  fit <- gam(x ~ s(z, bs = "cr", k = k), method = method, sp = exp(lsp))
  list(resid = residuals(fit), edf = sum(fit$edf), resid_default = residuals(default), edf_default = sum(default$edf))
}

gam_rows <- list()
for (dataset in c("pythia", "synthetic")) {
  for (run in unique(series$run[series$dataset == dataset])) {
    m <- run_matrix(dataset, run)
    z <- m[, in_domain_of(dataset)]
    ood <- setdiff(colnames(m), in_domain_of(dataset))
    k <- min(GAM_K, length(unique(z)), nrow(m) - 3)
    for (method in c("GCV.Cp", "REML")) {
      fits <- lapply(ood, function(t) criterion_min(m[, t], z, k, method))
      for (i in seq_along(ood)) for (j in seq_along(ood)) {
        if (j <= i) next
        gam_rows[[length(gam_rows) + 1]] <- data.frame(
          dataset = dataset, run = run, task_x = ood[i], task_y = ood[j], n = nrow(m), k = k,
          smoothing = c(GCV.Cp = "gcv", REML = "reml")[[method]],
          r = cor(fits[[i]]$resid, fits[[j]]$resid), edf_x = fits[[i]]$edf, edf_y = fits[[j]]$edf,
          r_default = cor(fits[[i]]$resid_default, fits[[j]]$resid_default),
          edf_x_default = fits[[i]]$edf_default, edf_y_default = fits[[j]]$edf_default)
      }
    }
  }
}
write_ref(do.call(rbind, gam_rows), "gam.csv")

# ---------------------------------------------------------------------------------------------------------
# Pooling across runs: metafor::rma(yi, vi, method = "PM") on Fisher z with vi = 1 / (n_eff - 4)
# ---------------------------------------------------------------------------------------------------------

meta_input <- with(linear[linear$dataset == "pythia", ],
                   data.frame(set = "pythia", task_x = task_x, task_y = task_y, run = run, r = r, n = n,
                              n_eff = n_eff, p_eff = p_eff))

# Two 20-run sets for the verdicts (the cases of issue 11):
# agree19: 19 runs with r between 0.02 and 0.71 (a real spread: Q significant), one run slightly negative and
#   not significant; n = n_eff = 40. The pooled r is clearly positive and 95% of the runs share its sign.
# split11: 11 runs negative, 9 positive, none significant; a pooled interval that excludes 0 only narrowly
#   (p = 0.024); Q not significant;
#   n = n_eff = 27.
agree19 <- c(tanh(seq(0.02, 0.88, length.out = 19)), -0.05)
split11 <- c(-0.38, -0.37, -0.34, -0.31, -0.28, -0.25, -0.22, -0.19, -0.16, -0.12, -0.08,
             0.02, 0.04, 0.05, 0.06, 0.07, 0.08, 0.1, 0.12, 0.14)
sizes <- c(agree19 = 40, split11 = 27)
for (set in names(sizes)) {
  r <- get(set)
  n <- sizes[[set]]
  meta_input <- rbind(meta_input, data.frame(set = set, task_x = "x", task_y = "y",
                                             run = sprintf("%s-run%02d", set, seq_along(r)), r = r, n = n,
                                             n_eff = n, p_eff = t_p(r, n - 3)))
}
meta_input$yi <- atanh(meta_input$r)
meta_input$vi <- 1 / (meta_input$n_eff - 4)
write_ref(meta_input, "meta_input.csv")

PM_CONTROL <- list(tol = 1e-14, maxiter = 1000)
meta_rows <- list()
for (key in unique(paste(meta_input$set, meta_input$task_x, meta_input$task_y, sep = "\r"))) {
  part <- meta_input[paste(meta_input$set, meta_input$task_x, meta_input$task_y, sep = "\r") == key, ]
  fit <- rma(yi, vi, data = part, method = "PM", control = PM_CONTROL)
  meta_rows[[length(meta_rows) + 1]] <- data.frame(
    set = part$set[1], task_x = part$task_x[1], task_y = part$task_y[1], k = fit$k, estimate = fit$b[1],
    se = fit$se, ci_low = fit$ci.lb, ci_high = fit$ci.ub, pval = fit$pval, QE = fit$QE, QEp = fit$QEp,
    I2 = fit$I2, tau2 = fit$tau2)
}
meta <- do.call(rbind, meta_rows)
write_ref(meta, "meta.csv")

# The verdict sets must be what the tests say they are.
a19 <- meta[meta$set == "agree19", ]
s11 <- meta[meta$set == "split11", ]
stopifnot(a19$ci_low > 0, a19$pval < 0.001, a19$QEp < 0.05, sum(agree19 > 0) == 19,
          t_p(-0.05, 40 - 3) > 0.05, abs(tanh(a19$estimate) - 0.40) < 0.02)
stopifnot(s11$ci_high < 0, s11$QEp > 0.05, sum(split11 < 0) == 11, sum(t_p(split11, 24) < 0.05) == 0)

# ---------------------------------------------------------------------------------------------------------
# Model or seed: metafor::rma(yi, vi, mods = ~ factor(family), method = "PM" / "REML") on the planted sets
# ---------------------------------------------------------------------------------------------------------

planted_input <- merge(linear[linear$dataset != "pythia", ], runs, by = c("dataset", "run"))
planted_input$yi <- atanh(planted_input$r)
planted_input$vi <- 1 / (planted_input$n_eff - 4)
sub_rows <- list()
mean_rows <- list()
CONTROL <- list(PM = PM_CONTROL, REML = list(threshold = 1e-14, maxiter = 10000, stepadj = 0.5))
for (dataset in unique(planted_input$dataset)) {
  for (pair in unique(paste(planted_input$task_x, planted_input$task_y))) {
    part <- planted_input[planted_input$dataset == dataset & paste(planted_input$task_x, planted_input$task_y) == pair, ]
    part <- part[order(part$run), ]
    for (method in c("PM", "REML")) {
      fit <- rma(yi, vi, mods = ~ factor(family), data = part, method = method, control = CONTROL[[method]])
      means <- rma(yi, vi, mods = ~ factor(family) - 1, data = part, method = method, control = CONTROL[[method]])
      sub_rows[[length(sub_rows) + 1]] <- data.frame(
        dataset = dataset, task_x = part$task_x[1], task_y = part$task_y[1], method = method, k = fit$k,
        QM = fit$QM, QMdf = fit$QMdf[1], QMp = fit$QMp, QE = fit$QE, QEp = fit$QEp, tau2 = fit$tau2, I2 = fit$I2)
      for (g in seq_along(means$b)) {
        mean_rows[[length(mean_rows) + 1]] <- data.frame(
          dataset = dataset, task_x = part$task_x[1], task_y = part$task_y[1], method = method,
          family = sub("factor\\(family\\)", "", rownames(means$b)[g]), estimate = means$b[g], se = means$se[g])
      }
    }
  }
}
subgroups <- do.call(rbind, sub_rows)
write_ref(subgroups, "subgroups.csv")
write_ref(do.call(rbind, mean_rows), "subgroup_means.csv")

# The planted truth, as the tests state it: the families differ in the planted-between set only.
xy <- subgroups[subgroups$task_x == "x" & subgroups$task_y == "y", ]
stopifnot(all(xy$QMp[xy$dataset == "planted-between"] < 0.001), all(xy$QMp[xy$dataset == "planted-seeds"] > 0.05))

# ---------------------------------------------------------------------------------------------------------
# Knapp-Hartung: the same models with test = "knha"; Q-profile intervals of tau^2 (confint) of the z models
# ---------------------------------------------------------------------------------------------------------

CI_CONTROL <- list(tol = 1e-12, maxiter = 10000)
tau2_ci <- function(fit) {
  ci <- suppressWarnings(confint(fit, control = CI_CONTROL)$random)
  c(ci["tau^2", "ci.lb"], ci["tau^2", "ci.ub"])
}
knha_rows <- list()
for (key in unique(paste(meta_input$set, meta_input$task_x, meta_input$task_y, sep = "\r"))) {
  part <- meta_input[paste(meta_input$set, meta_input$task_x, meta_input$task_y, sep = "\r") == key, ]
  fit <- rma(yi, vi, data = part, method = "PM", test = "knha", control = PM_CONTROL)
  interval <- tau2_ci(rma(yi, vi, data = part, method = "PM", control = PM_CONTROL))
  knha_rows[[length(knha_rows) + 1]] <- data.frame(
    set = part$set[1], task_x = part$task_x[1], task_y = part$task_y[1], k = fit$k, estimate = fit$b[1],
    se = fit$se, df = fit$ddf, ci_low = fit$ci.lb, ci_high = fit$ci.ub, pval = fit$pval, s2w = fit$s2w,
    tau2 = fit$tau2, tau2_ci_low = interval[1], tau2_ci_high = interval[2])
}
write_ref(do.call(rbind, knha_rows), "meta_knha.csv")

knha_sub <- list()
for (dataset in unique(planted_input$dataset)) {
  for (pair in unique(paste(planted_input$task_x, planted_input$task_y))) {
    part <- planted_input[planted_input$dataset == dataset & paste(planted_input$task_x, planted_input$task_y) == pair, ]
    part <- part[order(part$run), ]
    for (method in c("PM", "REML")) {
      fit <- rma(yi, vi, mods = ~ factor(family), data = part, method = method, test = "knha",
                 control = CONTROL[[method]])
      means <- rma(yi, vi, mods = ~ factor(family) - 1, data = part, method = method, test = "knha",
                   control = CONTROL[[method]])
      interval <- if (method == "PM") {
        tau2_ci(rma(yi, vi, mods = ~ factor(family), data = part, method = "PM", control = PM_CONTROL))
      } else c(NA, NA)
      families <- sub("factor\\(family\\)", "", rownames(means$b))
      knha_sub[[length(knha_sub) + 1]] <- data.frame(
        dataset = dataset, task_x = part$task_x[1], task_y = part$task_y[1], method = method, k = fit$k,
        QM = fit$QM, QMdf1 = fit$QMdf[1], QMdf2 = fit$QMdf[2], QMp = fit$QMp, s2w = fit$s2w, tau2 = fit$tau2,
        se_first = means$se[1], se_second = means$se[2], first = families[1], second = families[2],
        tau2_ci_low = interval[1], tau2_ci_high = interval[2])
    }
  }
}
write_ref(do.call(rbind, knha_sub), "subgroups_knha.csv")

# ---------------------------------------------------------------------------------------------------------
# Closed-form power, for the simulations of `ood-store plan` to be checked against
# ---------------------------------------------------------------------------------------------------------
# One run: the partial correlation of two series given one control on n checkpoints is distributed as a plain
# correlation of n - 1 observations, so its power is pwr.r.test(n - 1, r).
# Pooled over k runs (seeds) with between-run SD tau on Fisher z: each run's z is N(mu, v + tau^2), v = 1 / (n - 4),
# mu = atanh(r). With equal v the Paule-Mandel and DerSimonian-Laird tau^2 are both max(0, S^2 - v) (S^2 the
# sample variance of the k values), so the z test rejects when |mean| > z_crit sqrt(max(v, S^2) / k). Jackson &
# Turner (2017, section 3) integrate that over (k - 1) S^2 / (v + tau^2) ~ chi^2(k - 1), independent of the mean;
# so does jt_power. Knapp-Hartung's variance is then exactly S^2 / k: the one-sample t test, whose power is the
# noncentral t. metapower's formula (tau^2 known) is written beside them for comparison.

jt_power <- function(mu, v, tau2, k, alpha) {
  s2 <- v + tau2
  sd_mean <- sqrt(s2 / k)
  crit <- qnorm(1 - alpha / 2)
  integrand <- function(x) {
    threshold <- crit * sqrt(pmax(v, s2 * x / (k - 1)) / k)
    (pnorm((mu - threshold) / sd_mean) + pnorm((-mu - threshold) / sd_mean)) * dchisq(x, k - 1)
  }
  integrate(integrand, 0, Inf, rel.tol = 1e-12)$value
}
kh_power <- function(mu, v, tau2, k, alpha) {
  ncp <- mu / sqrt((v + tau2) / k)
  crit <- qt(1 - alpha / 2, k - 1)
  pt(crit, k - 1, ncp, lower.tail = FALSE) + pt(-crit, k - 1, ncp)
}
known_power <- function(mu, v, tau2, k, alpha) {
  lambda <- mu / sqrt((v + tau2) / k)
  crit <- qnorm(1 - alpha / 2)
  1 - pnorm(crit - lambda) + pnorm(-crit - lambda)
}
power_rows <- list()
for (cfg in list(c(30, 0.3), c(50, 0.25), c(100, 0.2))) {
  power_rows[[length(power_rows) + 1]] <- data.frame(
    kind = "pwr.r.test", test = "t", checkpoints = cfg[1], r = cfg[2], tau = 0, runs = 1, alpha = 0.05,
    power = pwr.r.test(n = cfg[1] - 1, r = cfg[2], sig.level = 0.05)$power, power_known_tau2 = NA)
}
for (cfg in list(c(200, 0.3, 0.3, 5), c(200, 0.2, 0.15, 3), c(200, 0.15, 0.1, 8))) {
  n <- cfg[1]; r <- cfg[2]; tau <- cfg[3]; k <- cfg[4]
  args <- list(mu = atanh(r), v = 1 / (n - 4), tau2 = tau^2, k = k, alpha = 0.05)
  power_rows[[length(power_rows) + 1]] <- data.frame(
    kind = "jackson-turner", test = "z", checkpoints = n, r = r, tau = tau, runs = k, alpha = 0.05,
    power = do.call(jt_power, args), power_known_tau2 = do.call(known_power, args))
  power_rows[[length(power_rows) + 1]] <- data.frame(
    kind = "noncentral-t", test = "knha", checkpoints = n, r = r, tau = tau, runs = k, alpha = 0.05,
    power = do.call(kh_power, args), power_known_tau2 = do.call(known_power, args))
}
write_ref(do.call(rbind, power_rows), "power.csv")
cat("wrote", length(list.files(here, pattern = "\\.csv$")), "CSV files to", here, "\n")
