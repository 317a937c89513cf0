import type { RequestHandler } from "express";
import type { Logger } from "pino";

/**
 * One line per request once it is answered (or abandoned): `error` for 5xx, `info` for 4xx, `debug`
 * otherwise, with the request id, method, URL, status and milliseconds. Nothing is built for a line
 * the logger's level drops (LOG_LEVEL=info, the default, logs refusals and failures only).
 */
export function accessLog(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const started = performance.now();
    const done = (aborted: boolean) => {
      const status = res.statusCode;
      const level = aborted ? "warn" : status >= 500 ? "error" : status >= 400 ? "info" : "debug";
      if (!logger.isLevelEnabled(level)) return;
      logger[level](
        {
          req_id: res.getHeader("X-Request-Id"),
          req: { method: req.method, url: req.originalUrl },
          res: { statusCode: status },
          responseTime: Math.round(performance.now() - started),
        },
        aborted ? "request aborted" : "request completed",
      );
    };
    res.once("finish", () => done(false));
    res.once("close", () => {
      if (!res.writableFinished) done(true);
    });
    next();
  };
}
