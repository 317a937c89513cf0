import type { ArtworksService } from "../artworks/artworks.service.ts";
import type { OwnershipService } from "../artworks/ownership.service.ts";
import { defineModule, migrationsOf } from "../module.ts";
import { registerChallengesRoutes } from "./challenges.routes.ts";
import { ChallengesService } from "./challenges.service.ts";
import { registerDiscussionsRoutes } from "./discussions.routes.ts";
import { DiscussionsService } from "./discussions.service.ts";
import { registerPostsRoutes } from "./posts.routes.ts";
import { PostsService } from "./posts.service.ts";

/**
 * The community (docs/integrators/community.md): posts with likes, comments and images; discussions
 * with replies; challenges with submissions (`challenge.joined`). Tables: community.tables.ts.
 */
export const communityModule = defineModule<{ posts: PostsService; discussions: DiscussionsService; challenges: ChallengesService }, { artworks: ArtworksService; ownership: OwnershipService }>({
  name: "community",
  migrations: migrationsOf(import.meta.url),
  create: ({ db, config, storage, links, artworks, ownership }) => {
    const posts = new PostsService({ db, storage, artworks, links });
    return { posts, discussions: new DiscussionsService({ db, posts, popularCacheMs: config.community.popularCacheMs }), challenges: new ChallengesService({ db, posts, ownership }) };
  },
  // In this order: the OpenAPI document lists the paths as they are declared.
  routes: ({ api }, { posts, discussions, challenges }) => {
    registerPostsRoutes(api, posts);
    registerDiscussionsRoutes(api, discussions);
    registerChallengesRoutes(api, challenges);
  },
});
